"""Throwaway Django app for the Tasks benchmark: a no-op task and a latency task."""
