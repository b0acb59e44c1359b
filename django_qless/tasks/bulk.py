"""Bulk enqueue of a Django task: `enqueue_many(task, calls)`, `QlessBackend.enqueue_many`.

Every call is checked as `QlessBackend.enqueue` checks one (Django's argument rules, JSON,
payload size), all before anything is written: a bad call raises its typed error, noting
its position, and nothing is enqueued. The puts then go in few round trips
(`core.put_many`), or on commit through the outbox inside a transaction, and each result's
`task_enqueued` is sent once its job is in Redis, as for `enqueue`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction

from ..bulk import split_call
from ..conf import get_settings
from ..connection import get_client
from .backend import QlessBackend
from .compat import Task, TaskResult

#: One call: its positional and its keyword arguments.
Call = tuple[Sequence[Any], Mapping[str, Any]]


def enqueue_with(backend: QlessBackend, task: Task[Any, Any],
                 calls: Iterable[Call]) -> list[TaskResult[Any]]:
    """Validate every call of `task`, then put them all on `backend` (now or on commit)."""
    backend.validate_task(task)
    client = get_client(backend.connection_for(task.queue_name))
    prepared: list[tuple[TaskResult[Any], str]] = []
    for index, call in enumerate(calls):
        try:
            args, kwargs = split_call(call)
            result = backend._new_result(task, args, kwargs)  # noqa: SLF001
            prepared.append((result, backend._encode(client, result)))  # noqa: SLF001
        except Exception as exc:
            exc.add_note(f"{task.module_path}: enqueue_many() call #{index}; nothing was "
                         "enqueued")
            raise
    if not prepared:
        return []
    send = functools.partial(put_all, backend, prepared)
    settings = get_settings()
    on_commit = backend.qless_options.enqueue_on_commit
    if on_commit is None:
        on_commit = settings.enqueue_on_commit
    # The rule of `enqueue`: workers must not see rows not yet committed.
    if on_commit and transaction.get_connection().in_atomic_block:
        if not (settings.outbox.enabled and _defer(backend, prepared)):
            transaction.on_commit(send)
    else:
        send()
    return [result for result, _ in prepared]


def enqueue_many(task: Task[Any, Any], calls: Iterable[Call]) -> list[TaskResult[Any]]:
    """Enqueue `task` once per `(args, kwargs)` call on its own backend, in few round trips
    on a `QlessBackend` (a task's `.using(...)` applies to every call); another backend
    enqueues the calls one by one."""
    backend = task.get_backend()
    if isinstance(backend, QlessBackend):
        return enqueue_with(backend, task, calls)
    results = []
    for call in calls:
        args, kwargs = split_call(call)
        results.append(task.enqueue(*args, **kwargs))
    return results


def put_all(backend: QlessBackend, prepared: Sequence[tuple[TaskResult[Any], str]]) -> None:
    """Write the jobs in few round trips, then send each `task_enqueued`."""
    client = get_client(backend.connection_for(prepared[0][0].task.queue_name))
    now = client.now()
    client.put_many([backend.put_command(client, result, encoded, now)
                     for result, encoded in prepared])
    for result, _ in prepared:
        backend._announce(result, now)  # noqa: SLF001


def _defer(backend: QlessBackend, prepared: Sequence[tuple[TaskResult[Any], str]]) -> bool:
    """Every put as an outbox row of this transaction, all put at commit."""
    from ..outbox import commit  # noqa: PLC0415 - a model: needs the app registry

    rows = [backend.outbox_row(result, encoded) for result, encoded in prepared]
    announces = [functools.partial(_announce_delivered, backend, result)
                 for result, _ in prepared]
    return commit.defer_many(rows, DEFAULT_DB_ALIAS, announces)


def _announce_delivered(backend: QlessBackend, result: TaskResult[Any], delivery: Any) -> None:
    """`task_enqueued` of one task put at commit, stamped with the put's time."""
    backend._announce(result, delivery.at)  # noqa: SLF001
