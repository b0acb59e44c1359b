"""The workers page's rows: what qless knows of each worker, and what ours publish.

qless lists workers it saw within `max-worker-age` with their job counts. A
`qless_worker` process also publishes its presence (`core.presence`): host, pid, version,
queues, current job, counts and memory. A worker is *live* while it reports (its presence
has not expired, or, for another client's worker, qless saw it within one lease), and
*silent* once it stopped: only silent workers can be forgotten.

A presence is a snapshot taken every few seconds, so the job it names may have finished since:
a job is shown as running only while qless says it is running, held by that worker, under a
lease that has not expired.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import Client, Job, QlessError, WorkerCounts
from ..core.presence import Presence, RunningJob, listed

#: Lease used to judge other clients' workers when `heartbeat` cannot be read.
DEFAULT_LEASE = 60.0


@dataclass(frozen=True)
class WorkerRow:
    """One worker on the page."""

    name: str
    jobs: int
    stalled: int
    last_seen: float | None
    presence: Presence | None
    #: Whether it is one of ours (it published a presence at some point).
    ours: bool
    live: bool
    #: Seconds since it was last seen, and since its process started (ours only).
    seen_ago: float | None = None
    up_for: float | None = None
    #: The jobs it runs now, each with how long it has been running (seconds).
    running: tuple[tuple[RunningJob, float], ...] = ()

    @property
    def cpu_percent(self) -> float | None:
        """The share of one core the process used on average since it started (ours only)."""
        if self.presence is None or not self.up_for:
            return None
        return 100.0 * self.presence.cpu_seconds / self.up_for

    @property
    def silent(self) -> bool:
        """Stopped reporting: the only workers the page offers to forget."""
        return not self.live


def worker_rows(client: Client, now: float) -> list[WorkerRow]:
    """Every worker qless knows or that published a presence, live ones first."""
    counts = {worker.name: worker for worker in client.workers.counts()}
    published = {entry.name: entry for entry in listed(client)}
    names = list(dict.fromkeys([*counts, *published]))
    seen = dict(zip(names, client.workers.last_seen(names), strict=True)) if names else {}
    lease = current_lease(client)
    jobs = running_jobs(client, [entry.presence for entry in published.values()])
    rows = []
    for name in names:
        known = counts.get(name, WorkerCounts(name, 0, 0))
        entry = published.get(name)
        presence = entry.presence if entry else None
        last = max((t for t in (seen.get(name), presence.seen if presence else None,
                                entry.last_published if entry else None) if t is not None),
                   default=None)
        if entry is not None:
            live = presence is not None
        else:
            live = last is not None and now - last <= lease
        rows.append(WorkerRow(
            name, known.jobs, known.stalled, last, presence, ours=entry is not None, live=live,
            seen_ago=None if last is None else max(0.0, now - last),
            up_for=None if presence is None else max(0.0, now - presence.started),
            running=() if presence is None else running_now(presence, jobs, now),
        ))
    return sorted(rows, key=lambda row: (not row.live, -(row.last_seen or 0), row.name))


def running_jobs(client: Client, presences: list[Presence | None]) -> dict[str, Job]:
    """The jobs the presences name, as qless has them now (one read for every worker)."""
    jids = [job.jid for presence in presences if presence for job in presence.running]
    return {job.jid: job for job in client.get_jobs(jids)} if jids else {}


def running_now(
    presence: Presence, jobs: dict[str, Job], now: float
) -> tuple[tuple[RunningJob, float], ...]:
    """The jobs a presence names that its worker really runs now, each with for how long."""
    shown = []
    for reported in presence.running:
        job = jobs.get(reported.jid)
        if job is None or job.state != "running" or job.worker != presence.name:
            continue  # finished (or handed on) since the snapshot was taken
        if job.expires <= now:
            continue  # its lease ran out: the worker no longer holds it
        started = max(reported.started, popped_at(job, presence.name))
        shown.append((reported, max(0.0, now - started)))
    return tuple(shown)


def popped_at(job: Job, worker: str) -> float:
    """When `worker` last took the job (whole seconds, as history keeps them; 0 if unknown).

    A snapshot taken during an earlier run of the same job would date the run from then."""
    return max((entry.when for entry in job.history
                if entry.what == "popped" and entry.worker == worker), default=0.0)


def worker_row(client: Client, name: str, now: float) -> WorkerRow | None:
    """One worker's row, or None when neither qless nor a presence knows it."""
    return next((row for row in worker_rows(client, now) if row.name == name), None)


def current_lease(client: Client) -> float:
    """The default lease (`heartbeat`), or qless's default when it cannot be read."""
    try:
        value = client.config.get("heartbeat")
    except QlessError:
        return DEFAULT_LEASE
    return float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_LEASE
