"""`JobDefinition`: what `@qless_job` returns, a `JobSpec` that can be enqueued.

`enqueue` and `enqueue_many` check their calls here, into submissions, and hand them to
the one enqueue path (`enqueue.dispatch`); immediate mode runs them inline through
`execute`, sending the signals a worker would send.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.dispatch import Signal

from . import bulk, signals
from .conf import get_settings
from .core.submission import Submission
from .enqueue import announce, dispatch
from .enqueue.request import Enqueue
from .exceptions import InvalidJobError
from .immediate import IMMEDIATE_WORKER, ImmediateJob
from .job_spec import JobLike, JobSpec, Unique, seconds
from .registry import registry
from .results import NOTHING, JobResult, JobStatus, immediate_results

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["IMMEDIATE_WORKER", "ImmediateJob", "JobDefinition", "JobLike", "Unique", "seconds"]


class JobDefinition(JobSpec[P, R]):
    """A job klass: the function, its qless defaults, and `.enqueue()` / `.using()`."""

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """qless `put`: validate in the caller, send now or on commit; returns the jid at once."""
        connection, submission = self.prepare(get_settings(), args, kwargs)
        dispatch.send(self._request(connection, [submission], many=False))
        return submission.jid

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """`enqueue` from async code, without blocking the event loop on Redis.

        Thread-sensitive, as Django's own `aenqueue`: the put runs in the thread that owns
        the database connection, so enqueue-on-commit sees the caller's transaction.
        """
        return await sync_to_async(self.enqueue, thread_sensitive=True)(*args, **kwargs)

    def enqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[str]:
        """Many `enqueue`s in few round trips: `calls` are `(args, kwargs)` pairs.

        Every call is checked before anything is written (a bad one raises its typed
        error, noting its position, and nothing is enqueued); the puts then follow the
        rules of `enqueue` (on commit, outbox, immediate mode, `unique`, signals). Returns
        the jids in the order of `calls`. See `django_qless.bulk`.
        """
        if self.jid is not None:
            raise InvalidJobError(
                f"{self.name}.enqueue_many(): a fixed jid (.using(jid=...)) would give every "
                "job the same one; enqueue_many needs one jid per job"
            )
        checked = bulk.check_calls(self, get_settings(), calls)
        if checked is None:
            return []
        connection, submissions = checked
        dispatch.send(self._request(connection, submissions, many=True))
        return [submission.jid for submission in submissions]

    async def aenqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[str]:
        """`enqueue_many` from async code (thread-sensitive, as `aenqueue`)."""
        return await sync_to_async(self.enqueue_many, thread_sensitive=True)(calls)

    def _request(self, connection: str, submissions: Sequence[Submission], *,
                 many: bool) -> Enqueue:
        """The enqueue of checked submissions, with this job's choices and announcement."""
        return Enqueue(
            connection=connection, submissions=submissions,
            announce=functools.partial(self._announce, connection),
            on_commit=self.on_commit, db_alias=self.db_alias,
            inline=functools.partial(self._run_inline, connection), many=many,
        )

    def _announce(self, connection: str, submissions: Sequence[Submission], at: float) -> None:
        """`job_enqueued` for the jobs just put (`at`, the put's clock, is not part of it)."""
        announce.jobs(submissions, connection, self)

    def _run_inline(self, connection: str, submission: Submission) -> None:
        """Immediate mode: run through `execute` now, sending the worker's signals."""
        announce.jobs([submission], connection, self, immediate=True)
        self._send(signals.job_started, submission, worker=IMMEDIATE_WORKER)
        started = time.monotonic()
        try:
            kept = self.kept_value(self.execute(ImmediateJob.from_submission(submission)))
        except Exception as exc:
            immediate_results.failed(self.name, submission.jid, exc)
            self._send(signals.job_failed, submission, worker=IMMEDIATE_WORKER,
                       duration=time.monotonic() - started, exception=exc,
                       group=f"{submission.queue}-{type(exc).__name__}")
            raise
        immediate_results.keep(self.name, JobResult(
            submission.jid, JobStatus.SUCCESSFUL, None if kept is NOTHING else kept
        ))
        self._send(signals.job_completed, submission, worker=IMMEDIATE_WORKER,
                   duration=time.monotonic() - started)

    def _send(self, signal: Signal, submission: Submission, **kwargs: Any) -> None:
        """Send a job signal with the registered definition as sender (`signals.send`: a
        failing receiver is logged, never raised to the caller of enqueue)."""
        if not signal.receivers:
            return  # nobody listens (the logging receivers were disconnected): build nothing
        sender = registry.lookup(self.name) or self
        signals.send(signal, sender, jid=submission.jid, queue=submission.queue,
                     klass=submission.klass, **kwargs)
