"""Workers known to qless (`workers`, `worker.deregister`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from . import validation as check
from .records import WorkerCounts, WorkerJobs, as_list

if TYPE_CHECKING:
    from .client import Client


class Workers:
    """Query and forget workers."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def counts(self) -> list[WorkerCounts]:
        """Every worker seen within `max-worker-age`, most recently active first."""
        reply = json.loads(self.client.call("workers"))
        return [
            WorkerCounts(name=str(w["name"]), jobs=int(w["jobs"]), stalled=int(w["stalled"]))
            for w in as_list(reply)
        ]

    def jobs(self, name: str) -> WorkerJobs:
        """The jids a worker holds: live locks and expired ones."""
        reply = json.loads(self.client.call("workers", check.worker_name(name)))
        return WorkerJobs(
            jobs=tuple(str(j) for j in as_list(reply.get("jobs"))),
            stalled=tuple(str(j) for j in as_list(reply.get("stalled"))),
        )

    def deregister(self, *names: str) -> None:
        """Forget workers (their jobs keep their locks until those expire)."""
        if names:
            self.client.call("worker.deregister", *(check.worker_name(n) for n in names))
