"""Last and next runs of recurring templates and cron schedules, each read in bounded calls.

No record of runs is written for this: a template's spawns are `<jid>-<count>`, so its
last one is `<jid>-<count>`; a cron schedule keeps its slot jobs by slot time
(`keys.cron_jobs`), so its last one is the latest slot not after now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core import Client, HistoryEntry, Job, RecurringJob, keys


@dataclass(frozen=True)
class LastRun:
    """The latest job a template spawned or a cron schedule put, and the job while it lasts."""

    jid: str
    #: The job as Redis holds it; None once it expired (completed jobs do) or was cancelled.
    job: Job | None
    #: A cron slot's instant, epoch seconds (known from the record once the job is gone too).
    slot: float | None = None

    @property
    def due(self) -> float | None:
        """When it was due, epoch seconds: the slot, else the spawn (its `put` event)."""
        if self.slot is not None or self.job is None:
            return self.slot
        put = next((e for e in self.job.history if e.what == "put"), None)
        return None if put is None else put.when

    @property
    def latest(self) -> HistoryEntry | None:
        """The job's latest event (what happened last, and when)."""
        history = self.job.history if self.job is not None else ()
        return history[-1] if history else None


def spawned_jid(template: RecurringJob) -> str | None:
    """The jid of the template's last spawn (None before its first)."""
    return f"{template.jid}-{template.count}" if template.count > 0 else None


def template_last_runs(client: Client, templates: Sequence[RecurringJob]) -> dict[str, LastRun]:
    """Template jid -> its last spawn, the jobs read in one `multiget` per chunk."""
    wanted = {t.jid: jid for t in templates if (jid := spawned_jid(t)) is not None}
    found = {job.jid: job for job in client.get_jobs(wanted.values())} if wanted else {}
    return {template: LastRun(jid, found.get(jid)) for template, jid in wanted.items()}


def cron_last_runs(client: Client, names: Sequence[str], now: float) -> dict[str, LastRun]:
    """Schedule name -> its latest slot job due by `now` (slots put early are not yet runs)."""
    if not names:
        return {}
    with client.redis.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.zrevrangebyscore(keys.cron_jobs(name), now, "-inf", start=0, num=1,
                                  withscores=True)
        replies: list[Any] = pipe.execute()
    latest = {name: (_text(reply[0][0]), float(reply[0][1]))
              for name, reply in zip(names, replies, strict=True) if reply}
    jobs = {job.jid: job for job in client.get_jobs(jid for jid, _ in latest.values())}
    return {name: LastRun(jid, jobs.get(jid), slot) for name, (jid, slot) in latest.items()}


def interval_next_runs(next_run: float | None, interval: float, count: int) -> tuple[float, ...]:
    """The next `count` spawn times: the stored next one, then every `interval` after it."""
    if next_run is None or interval <= 0:
        return ()
    return tuple(next_run + step * interval for step in range(count))


def _text(value: Any) -> str:
    """A reply string (bytes or str)."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
