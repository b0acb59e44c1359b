"""Test app holding the jobs the worker tests run."""
