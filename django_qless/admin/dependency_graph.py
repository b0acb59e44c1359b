"""The job page's dependency graph: the jobs a job waits for, and the jobs waiting for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core import Client, Job

#: Most neighbours drawn on each side (the rest are counted).
LIMIT = 20


@dataclass(frozen=True)
class Node:
    """One job of the graph; `state` "gone" when qless no longer has it (done and expired,
    or cancelled)."""

    jid: str
    klass: str
    state: str


@dataclass(frozen=True)
class Graph:
    """Both sides of one job, with how many were left out of each."""

    job: Node
    waits_for: tuple[Node, ...]
    needed_by: tuple[Node, ...]
    more_waits_for: int
    more_needed_by: int


def dependency_graph(client: Client, job: Job, limit: int = LIMIT) -> Graph | None:
    """The job's neighbours with their states (one read for both sides); None without any."""
    waits_for, needed_by = list(job.dependencies[:limit]), list(job.dependents[:limit])
    if not waits_for and not needed_by:
        return None
    found = {other.jid: other for other in client.get_jobs([*waits_for, *needed_by])}
    return Graph(
        job=Node(job.jid, job.klass, job.state),
        waits_for=nodes(waits_for, found),
        needed_by=nodes(needed_by, found),
        more_waits_for=max(0, len(job.dependencies) - limit),
        more_needed_by=max(0, len(job.dependents) - limit),
    )


def nodes(jids: Sequence[str], found: dict[str, Job]) -> tuple[Node, ...]:
    """Nodes for jids, in order; a jid qless no longer has is `gone`."""
    return tuple(
        Node(jid, found[jid].klass, found[jid].state) if jid in found else Node(jid, "", "gone")
        for jid in jids
    )
