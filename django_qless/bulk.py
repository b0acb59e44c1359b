"""`JobDefinition.enqueue_many`'s calls, every one checked before anything is written.

Every call is checked exactly as `.enqueue()` checks one (signature, JSON, payload size),
all of them before anything is written: one bad call raises its own typed error, with a
note naming its position, and nothing is put. The submissions then take the one enqueue
path (`enqueue.dispatch`) together: pipelined `put` (or `put.ifabsent` for `unique=` jobs)
script calls, `core.put_many.CHUNK` per round trip, under the same rules as `.enqueue()`:
on commit (through the outbox) inside a transaction, inline in immediate mode,
`job_enqueued` once each job is in Redis.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .conf import QlessSettings
from .core.submission import Submission
from .enqueue.calls import Call, note_position, split_call
from .job_spec import JobSpec


def check_calls(
    spec: JobSpec[Any, Any], settings: QlessSettings, calls: Iterable[Call]
) -> tuple[str, list[Submission]] | None:
    """The connection and one submission per call (None when there is none); a bad call's
    error notes its position."""
    connection = ""
    first: Submission | None = None
    submissions: list[Submission] = []
    for index, call in enumerate(calls):
        try:
            args, kwargs = split_call(call)
            if first is None:
                # The first call is checked whole; what the others share is checked once.
                connection, first = spec.prepare(settings, args, kwargs)
                submissions.append(first)
            else:
                spec.check_call(args, kwargs)
                encoded = spec.encode_call(settings, args, kwargs)
                submissions.append(first.with_job(spec.new_jid(encoded), encoded))
        except Exception as exc:
            note_position(exc, f"{spec.name}.enqueue_many(): call #{index}; nothing was enqueued")
            raise
    return None if first is None else (connection, submissions)
