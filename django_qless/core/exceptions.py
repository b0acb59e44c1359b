"""Errors raised by the qless client; every one of them derives from `QlessError`."""

from __future__ import annotations

from typing import Any

import redis


class QlessError(Exception):
    """Base class of every qless error (catch this, do not raise it directly)."""


class ScriptError(QlessError):
    """The Lua script refused a command; `message` is its text without Redis' wrapping."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"{command}: {message}" if command else message)
        self.command = command
        self.message = message


class JobNotFoundError(ScriptError):
    """The job (or recurring job) named in the command does not exist."""


class LockLostError(ScriptError):
    """The caller no longer holds the job: it timed out, moved, or went to another worker."""


class JobGoneError(LockLostError, JobNotFoundError):
    """The job the caller was running no longer exists (canceled): its lock is lost too."""


class JobStateError(ScriptError):
    """The job is not in a state that allows the command (e.g. timeout of a waiting job)."""


class DependencyError(ScriptError):
    """A dependency rule was broken: a cycle, a self-dependency, or cancelling a needed job."""


class InvalidArgumentError(QlessError, ValueError):
    """An argument was rejected before anything was written."""


class ScriptArgumentError(ScriptError, InvalidArgumentError):
    """The Lua script rejected an argument (missing, not a number, not JSON, ...)."""


class JobDataError(InvalidArgumentError):
    """Job data is not a JSON object that round-trips (NaN, sets, bytes, non-string keys...)."""


class PayloadTooLargeError(InvalidArgumentError):
    """The encoded job data is larger than the client's `max_payload_bytes`."""


class ConfigValueError(InvalidArgumentError):
    """A qless config value is invalid (when set, or as found stored in Redis)."""


class UnknownJobError(QlessError):
    """A job's klass is not registered, so it cannot be run."""


class RetryJob(Exception):  # noqa: N818 - a control-flow signal raised by jobs, not an error
    """Raised by a job to ask for a retry (after `delay` seconds) instead of failing."""

    def __init__(
        self, delay: float = 0, *, group: str | None = None, message: str | None = None
    ) -> None:
        super().__init__(message or f"retry requested (delay={delay})")
        self.delay = delay
        self.group = group
        self.message = message


class ScriptNotLoadedError(QlessError):
    """Redis does not have the script (restarted or flushed): nothing in that round trip ran."""


class QueueFullError(QlessError, redis.exceptions.OutOfMemoryError):
    """Redis is (nearly) at its `maxmemory`: the put was refused and nothing was written."""


class ReplicationError(QlessError):
    """The primary has the write, but fewer replicas than `REPLICA_ACK` asks confirmed it."""

    def __init__(
        self, command: str, jid: str, acknowledged: int, replicas: int, timeout_ms: int
    ) -> None:
        super().__init__(
            f"{command} of job {jid} was written to the primary but not confirmed by a "
            f"replica: {acknowledged} of {replicas} acknowledged within {timeout_ms} ms; "
            "a failover now could lose it"
        )
        self.command = command
        self.jid = jid
        self.acknowledged = acknowledged
        self.replicas = replicas


class PartialPutError(QlessError):
    """The script refused some commands of a bulk put; others were written.

    `replies` has one entry per command sent (its reply, or the exception it raised);
    commands after the refused round trip were not sent and have no entry.
    """

    def __init__(self, replies: list[Any], total: int) -> None:
        self.replies = replies
        self.errors = {i: reply for i, reply in enumerate(replies) if isinstance(reply, Exception)}
        written = len(replies) - len(self.errors)
        first = f" (first, #{min(self.errors)}: {self.errors[min(self.errors)]})" \
            if self.errors else ""
        super().__init__(
            f"{len(self.errors)} of {total} commands were refused{first}; {written} were "
            f"written, {total - len(replies)} not sent"
        )
