"""Enqueue and run hooks: their types, the registry, and each hook's failure logged once.

An enqueue hook is told of a job about to be put (`PendingJob`) and returns entries for
its metadata, which `core.metadata` keeps in the job's data under `META_KEY`. A run hook
is told of a job the worker is about to run (`JobRun`) and returns a context manager
that `running` wraps around the job's execution. Hooks are added here (`add_enqueue_hook`,
`add_run_hook`) or declared elsewhere: the Django layer hands `declare` a provider that
reads `QLESS["HOOKS"]`. A hook that raises is logged once per process and skipped; the
job is never lost to it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import validation as check

if TYPE_CHECKING:
    from .job import Job

logger = logging.getLogger("django_qless.hooks")

#: The key of job data under which the metadata of the enqueue hooks is kept.
META_KEY = "meta"


@dataclass(frozen=True)
class PendingJob:
    """The job an enqueue hook is told of: about to be put, its data without metadata."""

    jid: str
    klass: str
    queue: str
    #: The job data as encoded JSON.
    raw_data: str

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """The job data, decoded on first read."""
        return check.decode_object(self.raw_data)


@dataclass(frozen=True)
class JobRun:
    """The job a run hook wraps: the popped job and the worker that runs it."""

    job: Job
    #: The name of the worker running it (as qless knows it).
    worker: str

    @property
    def jid(self) -> str:
        """The job's id."""
        return self.job.jid

    @property
    def klass(self) -> str:
        """The job's klass: a `@qless_job` name or a Django task's module path."""
        return self.job.klass

    @property
    def queue(self) -> str:
        """The queue it was popped from."""
        return self.job.queue_name

    @property
    def attempt(self) -> int:
        """Which attempt this is, from 1."""
        return self.job.attempt

    @property
    def retries(self) -> int:
        """The retries the job was put with."""
        return self.job.retries

    @property
    def remaining(self) -> int:
        """The retries it has left."""
        return self.job.remaining

    @property
    def data(self) -> dict[str, Any]:
        """The job data, metadata included."""
        return self.job.data

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The entries the enqueue hooks added ({} when none)."""
        return metadata_of(self.job.data)


#: Returns entries to add to a job's metadata (None or {}: none).
EnqueueHook = Callable[[PendingJob], Mapping[str, Any] | None]
#: Returns the context manager wrapped around one job's execution.
RunHook = Callable[[JobRun], AbstractContextManager[Any]]


@dataclass(frozen=True)
class HookSet:
    """Hooks of both kinds, in the order they run."""

    enqueue: tuple[EnqueueHook, ...] = ()
    run: tuple[RunHook, ...] = ()


def metadata_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The metadata in job data ({} when it holds none, or none that is an object)."""
    found = data.get(META_KEY)
    return found if isinstance(found, Mapping) else {}


_lock = threading.Lock()
_added = HookSet()
_declared: Callable[[], HookSet] | None = None
#: (kind, hook) of each hook whose failure was logged in this process.
_reported: set[tuple[str, object]] = set()


def add_enqueue_hook(hook: EnqueueHook) -> None:
    """Run `hook` before every put of this process (added once however often it is added)."""
    global _added
    with _lock:
        if hook not in _added.enqueue:
            _added = HookSet((*_added.enqueue, hook), _added.run)


def remove_enqueue_hook(hook: EnqueueHook) -> None:
    """Stop running an added enqueue hook (nothing happens if it was not added)."""
    global _added
    with _lock:
        _added = HookSet(tuple(h for h in _added.enqueue if h != hook), _added.run)


def add_run_hook(hook: RunHook) -> None:
    """Wrap `hook` around every job this process runs (added once however often it is added)."""
    global _added
    with _lock:
        if hook not in _added.run:
            _added = HookSet(_added.enqueue, (*_added.run, hook))


def remove_run_hook(hook: RunHook) -> None:
    """Stop wrapping an added run hook (nothing happens if it was not added)."""
    global _added
    with _lock:
        _added = HookSet(_added.enqueue, tuple(h for h in _added.run if h != hook))


def declare(provider: Callable[[], HookSet] | None) -> None:
    """Read declared hooks from `provider` at every use (they run before the added ones)."""
    global _declared
    _declared = provider


def enqueue_hooks() -> tuple[EnqueueHook, ...]:
    """The enqueue hooks in effect: the declared ones, then the added ones."""
    added = _added.enqueue
    declared = () if _declared is None else _declared().enqueue
    return (*declared, *added) if declared and added else declared or added


def run_hooks() -> tuple[RunHook, ...]:
    """The run hooks in effect: the declared ones, then the added ones."""
    added = _added.run
    declared = () if _declared is None else _declared().run
    return (*declared, *added) if declared and added else declared or added


def failed(kind: str, hook: object, exc: BaseException, consequence: str) -> None:
    """Log a hook's failure, the first time only: a broken hook fails for every job."""
    try:
        key: tuple[str, object] = (kind, hook)
        hash(key)
    except TypeError:
        key = (kind, id(hook))
    with _lock:
        if key in _reported:
            return
        _reported.add(key)
    logger.error("qless %s hook %s failed (%s: %s); %s. Its later failures in this process "
                 "are not logged.", kind, _name(hook), type(exc).__name__, exc, consequence,
                 exc_info=exc)


def _name(hook: object) -> str:
    """A hook's dotted name, as people find it in their code."""
    module = getattr(hook, "__module__", None)
    name = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    return f"{module}.{name}" if module else name


#: What `running` returns without run hooks (also for a job whose hooks run elsewhere).
NO_HOOK: AbstractContextManager[Any] = contextlib.nullcontext()


def running(job: Job, worker: str) -> AbstractContextManager[Any]:
    """The run hooks entered around one job's execution (nothing to enter without hooks)."""
    hooks = run_hooks()
    if not hooks:
        return NO_HOOK
    return Running(hooks, JobRun(job, worker))


class Running:
    """The run hooks of one job, entered in order and exited in reverse, each on its own."""

    def __init__(self, hooks: tuple[RunHook, ...], run: JobRun) -> None:
        self.hooks = hooks
        self.run = run
        self.entered: list[tuple[RunHook, AbstractContextManager[Any]]] = []

    def __enter__(self) -> JobRun:
        for hook in self.hooks:
            try:
                manager = hook(self.run)
                manager.__enter__()
            except Exception as exc:
                failed("run", hook, exc, "the job runs without it")
                continue
            self.entered.append((hook, manager))
        return self.run

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        while self.entered:
            hook, manager = self.entered.pop()
            try:
                # What a hook answers is ignored: it may not swallow the job's failure.
                manager.__exit__(kind, exc, traceback)
            except Exception as error:
                if error is not exc:  # re-raising the job's own failure is no failure
                    failed("run", hook, error, "the job's outcome stands")
