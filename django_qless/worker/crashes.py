"""Crashes are loud: `faulthandler` prints the Python stack of a worker process that dies.

Enabled in every worker process (the supervisor, each worker, each isolated job's child,
which writes to a file its parent reads back). A segfault in a C extension, an `abort()`
or a fatal error then leaves the stack of every thread on stderr instead of a silent exit.
"""

from __future__ import annotations

import faulthandler
import sys

#: The process's standard error descriptor (sys.stderr may be replaced or closed).
STDERR = 2


def enable_faulthandler() -> None:
    """Dump every thread's stack to stderr on a fatal signal (kept if already enabled)."""
    if faulthandler.is_enabled():
        return
    try:
        faulthandler.enable(file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError, RuntimeError):
        # sys.stderr is None or has no descriptor (a daemon, a capturing test runner).
        faulthandler.enable(file=STDERR, all_threads=True)
