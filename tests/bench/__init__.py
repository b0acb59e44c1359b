"""Tests of the benchmarks' shared machinery (the benchmarks themselves are not run here)."""
