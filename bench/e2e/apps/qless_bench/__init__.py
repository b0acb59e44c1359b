"""Throwaway Django app for the end-to-end worker benchmark: a no-op job and a latency job."""
