"""A producer process of the outbox fault test: `COUNT` jobs enqueued in one transaction.

    python -m tests.faults.outbox_producer MODE COUNT

MODE: `migrate` creates the tables; `commit` commits, then runs an on-commit hook of its
own registered after the enqueues; `late` holds the transaction open for `HOLD` seconds
past the enqueues (its rows are due for the sweep the moment they commit), commits, and
starts its puts only once a sweep has taken one of its rows, so the two go after the same
rows at the same time; `die` exits (os._exit) right after the commit, before any put;
`rollback` rolls the transaction back. Prints one JSON line: the jids returned, then one
with whether the later hook ran, the error that left the transaction block, if any, how
many jobs the commit's puts created (the others were found in Redis, put by a sweep) and
whether `late` saw a sweep take a row before its puts.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import django

#: Exit status of the `die` mode: the process died between the commit and the puts.
DIED = 17
#: Seconds the `late` mode holds its transaction open after the enqueues.
HOLD = 1.0
#: Longest the `late` mode's commit waits for a sweep to take one of its rows.
SWEEP_WAIT = 20.0


class RollbackError(Exception):
    """Raised to roll the transaction back."""


def main(mode: str, count: int) -> None:
    """Run one mode and print what it did."""
    django.setup()
    from django.core.management import call_command  # noqa: PLC0415 - after setup
    from django.db import transaction  # noqa: PLC0415

    from django_qless import signals  # noqa: PLC0415
    from django_qless.outbox.models import OutboxEntry  # noqa: PLC0415
    from tests.faults.app.qless_jobs import work  # noqa: PLC0415

    if mode == "migrate":
        call_command("migrate", verbosity=0)
        return
    jids: list[str] = []
    after: list[bool] = []
    created: list[str] = []
    swept_first: list[bool] = []
    error = None

    def wait_for_a_sweep() -> None:
        deadline = time.monotonic() + SWEEP_WAIT
        while time.monotonic() < deadline:
            if OutboxEntry.objects.filter(jid__in=jids).count() < len(jids):
                swept_first.append(True)
                return
            time.sleep(0.01)

    def put_by_commit(sender: Any, jid: str, **kwargs: Any) -> None:
        created.append(jid)

    signals.job_enqueued.connect(put_by_commit, weak=False)
    try:
        with transaction.atomic():
            if mode == "die":
                # Registered first, so it runs first: the commit is done, no put has run.
                transaction.on_commit(lambda: os._exit(DIED))
            if mode == "late":
                # Registered first, so it runs first: the rows are visible, none put yet.
                transaction.on_commit(wait_for_a_sweep)
            jids = [work.using(queue="q").enqueue() for _ in range(count)]
            transaction.on_commit(lambda: after.append(True))
            print(json.dumps({"jids": jids}), flush=True)  # noqa: T201 - read by the test
            if mode == "late":
                time.sleep(HOLD)
            if mode == "rollback":
                raise RollbackError
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = type(exc).__name__
    report = {"after": bool(after), "error": error, "put_at_commit": len(created),
              "swept_first": bool(swept_first)}
    print(json.dumps(report), flush=True)  # noqa: T201


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
