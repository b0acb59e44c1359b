"""The `@qless_job` enqueues of one request, recorded while a `Recording` is active.

Nothing listens to the enqueue path until the first recording starts, and the listeners
are removed again when the last one ends, so requests without one pay nothing. The active
recording is a context variable: concurrent requests (threads, or ASGI tasks) each record
their own jobs, the puts made on commit included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from .. import signals
from ..enqueue import observers
from ..enqueue.request import Enqueue

#: Jobs kept per request; a larger bulk enqueue is counted, not listed.
MAX_JOBS = 500
_DISPATCH_UID = "django_qless.integrations.request_jobs"


@dataclass
class RecordedJob:
    """One job enqueued during the request, and whether and when it was put."""

    jid: str
    klass: str
    queue: str
    connection: str
    route: observers.Route
    #: The size of the `enqueue_many` it was part of (0: a single `enqueue`).
    bulk: int
    delay: float
    not_before: float | None
    priority: float | None
    tags: tuple[str, ...] | None
    #: Epoch seconds of the enqueue call and of its put (None: not put during the request).
    enqueued_at: float
    put_at: float | None = None
    #: Run inline in immediate mode rather than put into Redis.
    inline: bool = False


@dataclass
class Recording:
    """What one request enqueued, in order."""

    jobs: list[RecordedJob] = field(default_factory=list)
    #: Jobs enqueued beyond `MAX_JOBS`, counted only.
    omitted: int = 0

    def add(self, request: Enqueue, route: observers.Route) -> None:
        """Keep the jobs of one enqueue."""
        now = time.time()
        size = len(request.submissions) if request.many else 0
        room = max(0, MAX_JOBS - len(self.jobs))
        for submission in request.submissions[:room]:
            options = submission.options
            self.jobs.append(RecordedJob(
                submission.jid, submission.klass, submission.queue, request.connection, route,
                size, options.delay, options.not_before, options.priority, options.tags, now,
            ))
        self.omitted += max(0, len(request.submissions) - room)

    def put(self, jid: str, inline: bool) -> None:
        """Mark the first job of `jid` not yet put as put (or run inline) now."""
        for job in self.jobs:
            if job.jid == jid and job.put_at is None:
                job.put_at = time.time()
                job.inline = inline
                return


_current: ContextVar[Recording | None] = ContextVar("django_qless_request_jobs", default=None)
_lock = threading.Lock()
_active = 0


def start() -> tuple[Recording, Token[Recording | None]]:
    """Record the `@qless_job` enqueues made in this context, until `stop`."""
    record = Recording()
    token = _current.set(record)
    _listen(1)
    return record, token


def stop(token: Token[Recording | None]) -> None:
    """End the recording `start` returned `token` with."""
    _listen(-1)
    _current.reset(token)


@contextmanager
def recording() -> Iterator[Recording]:
    """Record the `@qless_job` enqueues made in this context until the block ends."""
    record, token = start()
    try:
        yield record
    finally:
        stop(token)


def _listen(change: int) -> None:
    """Count a recording in or out; the first one in connects, the last one out disconnects."""
    global _active  # one count for the whole process, changed under the lock
    with _lock:
        _active += change
        if _active == 1 and change > 0:
            observers.LISTENERS.append(_dispatched)
            signals.job_enqueued.connect(_enqueued, dispatch_uid=_DISPATCH_UID)
        elif _active == 0:
            observers.LISTENERS.remove(_dispatched)
            signals.job_enqueued.disconnect(dispatch_uid=_DISPATCH_UID)


def _dispatched(request: Enqueue, route: observers.Route) -> None:
    """Keep an enqueue's jobs in the recording of this context, if any."""
    record = _current.get()
    # Django tasks (`QlessBackend`) are listed by the toolbar's own Tasks panel.
    if record is not None and not request.task_backend:
        record.add(request, route)


def _enqueued(sender: object, *, jid: str, immediate: bool = False, **kwargs: Any) -> None:
    """`job_enqueued`: the job is in Redis (or runs inline) now."""
    record = _current.get()
    if record is not None:
        record.put(jid, immediate)
