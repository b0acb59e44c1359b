"""What a popped job's klass names: a registered `@qless_job`, or a Django Tasks task.

The registry is asked first; only a klass it does not know is looked up as a task
(`django_qless.tasks.worker.task_run`: only a job whose data carries the Tasks backend's
marker naming a `QlessBackend` alias, and only a module inside an installed app, is
imported; the task found must use a `QlessBackend`). Anything else is unknown: the
runner fails it at once without importing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from ..core import Job
from ..results import NOTHING
from .report import Outcome

if TYPE_CHECKING:
    from ..job_spec import JobSpec
    from ..retry import RetryPolicy

__all__ = ["NOTHING", "JobTarget", "Target", "find_task"]


class Target(Protocol):
    """How the runner runs one job and what it keeps of its end."""

    @property
    def time_limit(self) -> float | None:
        """Seconds the job may run (None: the worker's limit)."""

    @property
    def heartbeat(self) -> float | None:
        """Seconds between lease renewals (None: the worker's interval)."""

    @property
    def retry_policy(self) -> RetryPolicy | None:
        """Which failures are retried, and after how long."""

    def call(self, job: Job) -> Any:
        """Run the job's function; returns its value."""

    def stored(self, value: Any) -> Any:
        """The value to keep in the completed job (`NOTHING`: keep none); may raise
        `ResultNotStorableError`."""

    def finished(self, outcome: Outcome) -> None:
        """The job ended this way (told once qless has the final word)."""


class JobTarget:
    """A `@qless_job` definition: its return value is kept when it or the setting says so."""

    def __init__(self, definition: JobSpec[Any, Any]) -> None:
        self.definition = definition
        self.time_limit = definition.time_limit
        self.heartbeat = definition.heartbeat
        self.retry_policy = definition.retry_policy

    def call(self, job: Job) -> Any:
        """`JobDefinition.execute` (async functions run on the worker's loop)."""
        return self.definition.execute(job)

    def stored(self, value: Any) -> Any:
        """The checked value with `store_result` (or `QLESS['STORE_RESULTS']`), else NOTHING."""
        return self.definition.kept_value(value)

    def finished(self, outcome: Outcome) -> None:
        """Nothing more: the job signals are sent by the reporter."""


def find_task(job: Job) -> Target | None:
    """The Tasks task a job names, or None (also when no Tasks API is installed)."""
    try:
        from ..tasks.worker import task_run  # noqa: PLC0415 - optional: needs django.tasks
    except ImportError:
        return None
    return task_run(job)


def runs_tasks() -> bool:
    """True when a `TASKS` alias uses the qless backend (then a popped job may be a task)."""
    try:
        from ..tasks.backend import QlessBackend  # noqa: PLC0415 - optional: needs django.tasks
    except ImportError:
        return False
    for config in getattr(settings, "TASKS", {}).values():
        try:
            backend = import_string(str(config.get("BACKEND", "")))
        except ImportError:
            continue
        if isinstance(backend, type) and issubclass(backend, QlessBackend):
            return True
    return False
