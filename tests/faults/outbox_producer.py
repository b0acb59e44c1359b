"""A producer process of the outbox fault test: `COUNT` jobs enqueued in one transaction.

    python -m tests.faults.outbox_producer MODE COUNT

MODE: `migrate` creates the tables; `commit` commits, then runs an on-commit hook of its
own registered after the enqueues; `die` exits (os._exit) right after the commit, before
any put; `rollback` rolls the transaction back. Prints one JSON line: the jids returned,
whether the later hook ran, and the error that left the transaction block, if any.
"""

from __future__ import annotations

import json
import os
import sys

import django

#: Exit status of the `die` mode: the process died between the commit and the puts.
DIED = 17


class RollbackError(Exception):
    """Raised to roll the transaction back."""


def main(mode: str, count: int) -> None:
    """Run one mode and print what it did."""
    django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after setup
    from django.db import transaction  # noqa: PLC0415

    from tests.faults.app.qless_jobs import work  # noqa: PLC0415

    if mode == "migrate":
        call_command("migrate", verbosity=0)
        return
    jids: list[str] = []
    after: list[bool] = []
    error = None
    try:
        with transaction.atomic():
            if mode == "die":
                # Registered first, so it runs first: the commit is done, no put has run.
                transaction.on_commit(lambda: os._exit(DIED))
            jids = [work.using(queue="q").enqueue() for _ in range(count)]
            transaction.on_commit(lambda: after.append(True))
            print(json.dumps({"jids": jids}), flush=True)  # noqa: T201 - read by the test
            if mode == "rollback":
                raise RollbackError
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = type(exc).__name__
    print(json.dumps({"after": bool(after), "error": error}), flush=True)  # noqa: T201


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
