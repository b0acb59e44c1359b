"""Workers known to qless (`workers`, `worker.deregister`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import commands, keys
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
        reply = json.loads(self.client.run(commands.workers()))
        return [
            WorkerCounts(name=str(w["name"]), jobs=int(w["jobs"]), stalled=int(w["stalled"]))
            for w in as_list(reply)
        ]

    def jobs(self, name: str) -> WorkerJobs:
        """The jids a worker holds: live locks and expired ones."""
        reply = json.loads(self.client.run(commands.workers(name)))
        return WorkerJobs(
            jobs=tuple(str(j) for j in as_list(reply.get("jobs"))),
            stalled=tuple(str(j) for j in as_list(reply.get("stalled"))),
        )

    def deregister(self, *names: str) -> None:
        """Forget workers (their jobs keep their locks until those expire)."""
        if names:
            self.client.run(commands.forget_workers(names))

    def seen_since(self, when: float) -> int:
        """How many workers qless saw (pop or heartbeat) at `when` or later."""
        return int(self.client.redis.zcount(keys.WORKERS, when, "+inf"))

    def last_seen(self, names: Sequence[str]) -> list[float | None]:
        """When qless last saw each worker (pop or heartbeat), None for one it does not know."""
        # The script's `workers` lists only workers younger than max-worker-age: read the
        # set itself so a health check can tell "old" from "never seen".
        checked = [check.existing_name(name, "worker name") for name in names]
        found = self.client.redis.zmscore(keys.WORKERS, checked) if checked else []
        return [None if score is None else float(score) for score in found]
