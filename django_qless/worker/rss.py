"""Resident memory of this process, for `--max-memory`."""

from __future__ import annotations

import os
import resource
import sys

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    """Current resident set size in MiB (peak RSS where /proc is not available)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE / 1_048_576
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # ru_maxrss is in KiB on Linux and in bytes on macOS.
        return peak / 1_048_576 if sys.platform == "darwin" else peak / 1024
