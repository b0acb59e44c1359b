"""`QlessBackend`: Django's Tasks framework on qless (enqueue and results).

A task's `enqueue` is one qless `put`: the result id is the jid, `queue_name` the qless
queue, `priority` the qless priority (both order higher first), `run_after` a delay, the
klass the task's module path and the data `payload.call_data`. Results are read back from
the job (`results.build_result`).
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asgiref.sync import sync_to_async
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from .. import signals
from ..conf import get_settings
from ..connection import alias_for_queue, get_client
from ..core import Client, InvalidArgumentError, Job, JobDataError, validation
from ..core.submission import PutOptions, Submission
from ..enqueue import dispatch
from ..enqueue.calls import note_position, split_call
from ..enqueue.request import Enqueue
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .exceptions import TaskArgumentsError
from .options import parse_options, parse_queues
from .payload import call_data, is_task_data
from .resolve import resolve_task
from .results import as_datetime, build_result


class QlessBackend(BaseTaskBackend):
    """A `TASKS` backend that puts tasks on qless queues and reads their results back."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        parse_queues(alias, self.queues)
        self.qless_options = parse_options(alias, self.options)

    # What the worker reads (OPTIONS where Django has no word).

    @property
    def heartbeat(self) -> float | None:
        """Seconds between lease renewals of a running task (None: the worker's default)."""
        return self.qless_options.heartbeat

    @property
    def time_limit(self) -> float | None:
        """Seconds a task may run (None: the worker's default)."""
        return self.qless_options.time_limit

    @property
    def result_max_bytes(self) -> int:
        """Largest return value the worker stores, in bytes of UTF-8 JSON."""
        return self.qless_options.result_max_bytes

    def connection_for(self, queue: str) -> str:
        """The `QLESS` connection alias a queue's tasks are put on."""
        return self.qless_options.connection or alias_for_queue(queue)

    # Enqueue

    def validate_task(self, task: Task[Any, Any]) -> None:
        """Django's checks, plus what qless needs: an importable path and a valid queue name."""
        super().validate_task(task)
        if task.func.__qualname__ != task.func.__name__:
            raise InvalidTask("Task function must be defined at a module level.")
        try:
            validation.label(task.module_path, "task module path")
            validation.queue_name(task.queue_name)
        except InvalidArgumentError as exc:
            raise InvalidTask(str(exc)) from exc

    def enqueue(
        self, task: Task[Any, Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[Any]:
        """Validate and encode in the caller, then `put` now or on commit; returns at once."""
        self.validate_task(task)
        result = self._new_result(task, args, kwargs)
        connection = self.connection_for(task.queue_name)
        submission = self.submission(result, self._encode(get_client(connection), result))
        dispatch.send(self._request(connection, [(result, submission)], many=False))
        return result

    def enqueue_many(
        self, task: Task[Any, Any], calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[TaskResult[Any]]:
        """Many `enqueue`s of one task in few round trips: every call checked (as `enqueue`
        checks one) before anything is written; the results in the order of `calls`."""
        self.validate_task(task)
        connection = self.connection_for(task.queue_name)
        client = get_client(connection)
        prepared: list[tuple[TaskResult[Any], Submission]] = []
        for index, call in enumerate(calls):
            try:
                args, kwargs = split_call(call)
                result = self._new_result(task, args, kwargs)
                prepared.append((result, self.submission(result, self._encode(client, result))))
            except Exception as exc:
                note_position(exc, f"{task.module_path}: enqueue_many() call #{index}; nothing was "
                             "enqueued")
                raise
        if prepared:
            dispatch.send(self._request(connection, prepared, many=True))
        return [result for result, _ in prepared]

    def submission(self, result: TaskResult[Any], encoded: str) -> Submission:
        """The put of a task's job: its `run_after` as the time it may run from."""
        task = result.task
        return Submission(result.id, task.module_path, task.queue_name, encoded, PutOptions(
            # 0.0, not None: the delay of a task without run_after is 0, wherever it is put.
            not_before=0.0 if task.run_after is None else task.run_after.timestamp(),
            priority=task.priority, tags=self.qless_options.tags or None,
            retries=self.qless_options.retries,
        ))

    def _request(self, connection: str, prepared: Sequence[tuple[TaskResult[Any], Submission]],
                 *, many: bool) -> Enqueue:
        """The enqueue of checked tasks: on commit per OPTIONS, no immediate mode."""
        results = {submission.jid: result for result, submission in prepared}
        on_commit = self.qless_options.enqueue_on_commit
        return Enqueue(
            connection=connection, submissions=[submission for _, submission in prepared],
            announce=functools.partial(self._announce_put, results), on_commit=on_commit,
            many=many, task_backend=self.alias,
        )

    def _announce_put(self, results: Mapping[str, TaskResult[Any]],
                      submissions: Sequence[Submission], at: float) -> None:
        """`task_enqueued` for each task just put, stamped with the put's clock."""
        for submission in submissions:
            self._announce(results[submission.jid], at)

    def job_data(self, client: Client, task: Task[Any, Any], args: Sequence[Any],
                 kwargs: Mapping[str, Any]) -> str:
        """The job data (JSON) `enqueue` would put for this call, checked as it checks it."""
        self.validate_task(task)
        return self._encode(client, self._new_result(task, args, kwargs))

    def _new_result(
        self, task: Task[Any, Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[Any]:
        """A READY result with Django's normalised arguments (its errors become typed)."""
        try:
            return TaskResult(
                task=task, id=uuid.uuid4().hex, status=TaskResultStatus.READY, enqueued_at=None,
                started_at=None, finished_at=None, last_attempted_at=None, args=list(args),
                kwargs=dict(kwargs), backend=self.alias, errors=[], worker_ids=[],
            )
        except (TypeError, ValueError) as exc:
            raise TaskArgumentsError(f"{task.module_path}: arguments are not JSON: {exc}") from exc
        except RecursionError:  # Django's normalisation recurses once or twice a level
            # Caused by the error @qless_job gives for such data; the RecursionError stays
            # as the context.
            too_deep = validation.too_deep()
            raise TaskArgumentsError(f"{task.module_path}: {too_deep}") from too_deep

    def _encode(self, client: Client, result: TaskResult[Any]) -> str:
        """The job data as JSON: `TaskArgumentsError` unless it round-trips (NaN, int keys),
        `PayloadTooLargeError` over `QLESS['MAX_PAYLOAD_BYTES']`."""
        task = result.task
        data = call_data(result.args, result.kwargs, backend=self.alias,
                         takes_context=task.takes_context, run_after=task.run_after)
        try:
            return client.encode(data)
        except JobDataError as exc:
            raise TaskArgumentsError(f"{task.module_path}: {exc}") from exc

    def _announce(self, result: TaskResult[Any], now: float) -> None:
        """Stamp the result with its put's time and send `task_enqueued`."""
        # qless stamps the put in whole seconds; get_result reads that same time back.
        object.__setattr__(result, "enqueued_at", as_datetime(math.floor(now)))
        # Sent robustly, as django_qless sends its own signals: the job is in Redis already,
        # so a failing receiver must not make the caller believe the enqueue failed.
        signals.send(task_enqueued, type(self), task_result=result)

    # Results

    def get_result(self, result_id: str) -> TaskResult[Any]:
        """The result of a task this backend enqueued; `TaskResultDoesNotExist` otherwise."""
        job = self._find_job(result_id)
        if not is_task_data(_data_or_empty(job)):
            raise TaskResultDoesNotExist(f"{result_id} is a qless job, not a Django task")
        marker = job.data["task"]
        if marker.get("backend") != self.alias:
            raise TaskResultDoesNotExist(
                f"{result_id} was enqueued by backend {marker.get('backend')!r}, not {self.alias!r}"
            )
        task = resolve_task(job.klass)
        if task is None:
            raise TaskResultDoesNotExist(f"{result_id}: no task {job.klass!r} on a QlessBackend")
        return build_result(job, task, self.alias)

    async def aget_result(self, result_id: str) -> TaskResult[Any]:
        """`get_result` in a worker thread, so Redis I/O never blocks the event loop."""
        # No database is involved, so the read need not wait for the thread-sensitive one.
        return await sync_to_async(self.get_result, thread_sensitive=False)(result_id)

    def _find_job(self, result_id: str) -> Job:
        """The job of a result id on the connections this backend's queues use."""
        for alias in self._read_aliases():
            try:
                job = get_client(alias).get_job(result_id)
            except InvalidArgumentError as exc:  # not a jid at all
                raise TaskResultDoesNotExist(result_id) from exc
            if job is not None:
                return job
        raise TaskResultDoesNotExist(result_id)

    def _read_aliases(self) -> list[str]:
        """Connections to look for a result on: the configured one, or the queues' ones."""
        if self.qless_options.connection is not None:
            return [self.qless_options.connection]
        if not self.queues:
            return list(get_settings().connections)
        return _unique(alias_for_queue(queue) for queue in sorted(self.queues))

    def check(self, **kwargs: Any) -> Iterable[checks.CheckMessage]:
        """System check: `OPTIONS['CONNECTION']` must name a `QLESS` connection."""
        connection = self.qless_options.connection
        try:
            known = get_settings().connections
        except ImproperlyConfigured:
            return  # a broken QLESS setting is django_qless's own checks' to report
        if connection is not None and connection not in known:
            yield checks.Error(
                f"TASKS[{self.alias!r}]['OPTIONS']['CONNECTION'] is {connection!r}, not a "
                f"QLESS connection (configured: {', '.join(known)})",
                obj=f"TASKS[{self.alias!r}]", id="django_qless.E030",
            )


def _data_or_empty(job: Job) -> Mapping[str, Any]:
    """The job's data, or {} when it is not a JSON object (then it is no task's)."""
    try:
        return job.data
    except JobDataError:
        return {}


def _unique(items: Iterable[str]) -> list[str]:
    """Items without repeats, in first-seen order."""
    return list(dict.fromkeys(items))
