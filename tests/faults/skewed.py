"""`python -m tests.faults.skewed OFFSET ARGS...`: `manage.py qless_worker ARGS` with a moved clock.

The worker's clock is `WorkerOptions.clock_offset` seconds off the machine's (and so off
Redis' TIME): everything it sends (pop, heartbeat, complete) carries the skewed `now`,
and its start-up checks see the skew, as with a worker host whose clock drifted.
"""

from __future__ import annotations

import sys
from typing import Any

import django
from django.core.management import execute_from_command_line


def main(argv: list[str]) -> None:
    """Patch the worker options to carry the offset, then run the command."""
    offset = float(argv[1])
    django.setup()
    from django_qless.worker.options import WorkerOptions  # noqa: PLC0415 - after setup

    original = WorkerOptions.from_settings.__func__  # type: ignore[attr-defined]

    def with_offset(cls: type[WorkerOptions], **overrides: Any) -> WorkerOptions:
        options: WorkerOptions = original(cls, **overrides)
        return options.replace(clock_offset=offset)

    WorkerOptions.from_settings = classmethod(with_offset)  # type: ignore[method-assign,assignment]
    execute_from_command_line(["manage.py", "qless_worker", *argv[2:]])


if __name__ == "__main__":
    main(sys.argv)
