"""Helpers of run.py (standard library only): the embedded Redis, child processes, checks."""
