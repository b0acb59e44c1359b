"""`python -m tests.faults.stepped FILE ARGS...`: `qless_worker ARGS` with a clock that can step.

The worker's qless clock is the machine's plus the seconds written in FILE, read at every
call, so a test steps it forward or back while the worker runs, as an NTP step or a
resumed VM would. Everything the worker sends (pop, heartbeat, complete, its start-up
skew check) carries the stepped `now`; its logs and the ledger keep the machine's time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import django
from django.core.management import execute_from_command_line


def read_offset(path: Path) -> float:
    """The seconds the clock is moved by now."""
    return float(path.read_text())


def step_to(path: Path, seconds: float) -> None:
    """Move the clock to `seconds` off the machine's, atomically (a reader never sees half)."""
    partial = path.with_suffix(".partial")
    partial.write_text(repr(float(seconds)))
    os.replace(partial, path)


def main(argv: list[str]) -> None:
    """Make the worker's clock follow FILE, then run the command."""
    path = Path(argv[1])
    django.setup()
    from django_qless.worker import client  # noqa: PLC0415 - after setup

    def stepped(clock: Callable[[], float], seconds: float) -> Callable[[], float]:
        return lambda: clock() + seconds + read_offset(path)

    client._offset = stepped
    execute_from_command_line(["manage.py", "qless_worker", *argv[2:]])


if __name__ == "__main__":
    main(sys.argv)
