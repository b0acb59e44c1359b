"""The registry of job klasses: the only functions a worker will run."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeVar

from django.utils.module_loading import autodiscover_modules

from .exceptions import DuplicateJobError, UnknownJobError

if TYPE_CHECKING:
    # The spec, not `definitions.JobDefinition`: the enqueue path asks the registry for
    # its signals' senders, so the registry must not import the enqueue path.
    from .job_spec import JobSpec

#: A registered job, typed as precisely as it was given.
S = TypeVar("S", bound="JobSpec[Any, Any]")

#: Module imported from every installed app so its jobs register in every process.
JOBS_MODULE = "qless_jobs"


class Registry:
    """klass name -> `JobDefinition`; duplicates are refused, unknown names raise."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobSpec[Any, Any]] = {}
        self._lock = threading.Lock()

    def register(self, defn: S) -> S:
        """Add a definition; raises `DuplicateJobError` if another function has its name."""
        with self._lock:
            existing = self._jobs.get(defn.name)
            if existing is not None and not _same_source(existing, defn):
                raise DuplicateJobError(
                    f"job name {defn.name!r} is already registered for "
                    f"{_where(existing)}; give {_where(defn)} another one with "
                    "@qless_job(name=...)"
                )
            # Re-running the same module (importlib.reload) replaces the entry.
            self._jobs[defn.name] = defn
        return defn

    def unregister(self, name: str) -> None:
        """Remove a definition (tests use this to clean up)."""
        with self._lock:
            self._jobs.pop(name, None)

    def get(self, klass: str) -> JobSpec[Any, Any]:
        """The definition of a klass; raises `UnknownJobError` if none is registered."""
        defn = self._jobs.get(klass)
        if defn is None:
            raise UnknownJobError(
                f"no job registered under {klass!r}: is its module a {JOBS_MODULE}.py of an "
                "installed app, or imported by one?"
            )
        return defn

    def lookup(self, klass: str) -> JobSpec[Any, Any] | None:
        """The definition of a klass, or None."""
        return self._jobs.get(klass)

    def __contains__(self, klass: object) -> bool:
        return klass in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def all(self) -> list[JobSpec[Any, Any]]:
        """Every definition, sorted by name."""
        return [self._jobs[name] for name in sorted(self._jobs)]


def _same_source(one: JobSpec[Any, Any], other: JobSpec[Any, Any]) -> bool:
    """True when both come from the same line of the same file (a module run twice)."""
    if one.func is other.func:
        return True
    code_a = getattr(one.func, "__code__", None)
    code_b = getattr(other.func, "__code__", None)
    if code_a is None or code_b is None:
        return False
    return (code_a.co_filename, code_a.co_firstlineno, one.func.__qualname__) == (
        code_b.co_filename, code_b.co_firstlineno, other.func.__qualname__
    )


def _where(defn: JobSpec[Any, Any]) -> str:
    """`module.qualname` of a definition's function."""
    return f"{defn.func.__module__}.{defn.func.__qualname__}"


registry = Registry()


def autodiscover() -> None:
    """Import the `qless_jobs` module of every installed app (those that have one)."""
    autodiscover_modules(JOBS_MODULE)
