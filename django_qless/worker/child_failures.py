"""Failures of a job run in a child process (`--isolation process`), as the parent sees them.

The parent never receives the child's exception object (only JSON crosses the pipe), so it
fails the job with a stand-in: a `ChildFailure` subclass named like the original (same
module and qualified name, hence the same failure group and recorded class path) that
carries the child's formatted traceback and the retry decision the child took with the
real exception. The parent's own verdicts (hard time limit, memory cap, a child that
died) are `ChildFailure`s too.
"""

from __future__ import annotations

from typing import Any

from ..core import RetryJob
from .failures import truncate


class ChildFailure(Exception):  # noqa: N818 - stands in for any exception class
    """A job's child process failed it; `message` is what the job's failure records."""

    def __init__(self, message: str, *, retry: bool = False, ran_hooks: bool = False) -> None:
        super().__init__(message.strip().splitlines()[-1] if message.strip() else message)
        self.message = truncate(message)
        #: Whether the job's retry policy retries this failure (decided where it happened).
        self.retry = retry
        #: Whether the child's run hooks were exited with the real exception (a child that
        #: was killed, or died, never exited them).
        self.ran_hooks = ran_hooks


class MemoryLimitExceeded(ChildFailure):  # noqa: N818 - the failure group is named after it
    """The job's child process went past `job_memory_mb` and was killed."""


class ChildProcessDied(ChildFailure):  # noqa: N818 - the failure group is named after it
    """The job's child process died (signal, `os._exit`) without reporting an outcome."""


_stand_ins: dict[str, type[ChildFailure]] = {}


def stand_in(path: str) -> type[ChildFailure]:
    """A `ChildFailure` class whose module and qualified name are those of `path`."""
    cls = _stand_ins.get(path)
    if cls is None:
        module, _, qualname = path.rpartition(".")
        name = qualname.rpartition(".")[2] or "Exception"
        cls = type(name, (ChildFailure,), {"__module__": module or "builtins",
                                          "__qualname__": qualname or name})
        _stand_ins[path] = cls
    return cls


def from_report(report: dict[str, Any]) -> BaseException:
    """The exception the parent settles a job with, from the child's JSON failure report."""
    if report.get("kind") == "retry":
        delay = float(report.get("delay", 0))
        return RetryJob(delay, group=report.get("group"), message=report.get("retry_message"))
    path = str(report.get("path") or "builtins.Exception")
    return stand_in(path)(str(report.get("message", "")), retry=bool(report.get("retry")),
                          ran_hooks=True)
