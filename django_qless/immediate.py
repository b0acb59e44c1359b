"""`ImmediateJob`: what a job function is handed when it runs inline, not from Redis."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from .core import validation
from .core.submission import Submission

#: Worker name reported by the signals of jobs run inline in immediate mode.
IMMEDIATE_WORKER = "immediate"


class ImmediateJob:
    """Stands in for a `core.Job` when a job runs inline (immediate mode, `.call()`)."""

    def __init__(self, jid: str, klass: str, queue_name: str, raw_data: str, **fields: Any):
        self.jid = jid
        self.klass = klass
        self.queue_name = queue_name
        self.raw_data = raw_data
        self.priority: float = fields.get("priority") or 0
        self.tags: tuple[str, ...] = tuple(fields.get("tags") or ())
        self.retries: int = 5 if fields.get("retries") is None else int(fields["retries"])
        self.remaining = self.retries
        self.tracked: bool = bool(fields.get("tracked"))
        self.worker = IMMEDIATE_WORKER
        self.state = "running"
        self.expires = math.inf
        self.ttl = math.inf
        self.logs: list[tuple[str, dict[str, Any] | None]] = []

    @classmethod
    def from_submission(cls, submission: Submission) -> ImmediateJob:
        """The inline job for a validated submission."""
        options = submission.options
        return cls(
            submission.jid, submission.klass, submission.queue, submission.data,
            priority=options.priority, tags=options.tags, retries=options.retries,
            tracked=options.tracked,
        )

    def __repr__(self) -> str:
        return f"<ImmediateJob {self.jid} {self.klass} in {self.queue_name}>"

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """The job data, decoded like a worker would."""
        return validation.decode_object(self.raw_data)

    def heartbeat(self, data: Mapping[str, Any] | None = None) -> float:
        """Nothing to renew inline; returns the (infinite) expiry."""
        return self.expires

    def log(self, message: str, data: Mapping[str, Any] | None = None) -> None:
        """Keep the entry on the object (there is no history in Redis)."""
        self.logs.append((message, None if data is None else dict(data)))
