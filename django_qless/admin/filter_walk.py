"""`FilterWalk`: a `JobFilter` walked over the most selective qless index it names.

Candidates come from one list of sources, fixed by the filter: a failure group, else a
tag, else a worker's jobs, else the sets of a state (every failure group, the completed
set, or each queue's work/locks/scheduled/depends set), else every set of one queue or of
every queue. Each step reads bounded slices by rank (ZRANGE/LRANGE with an offset, never
KEYS or SCAN), fetches only the fields a criterion needs (pipelined HMGET) and tests the
criteria in Python, so no Redis call grows with the size of a set.

The cursor holds the source, the offset in it, the size the source had when the walk
reached it, and the candidates looked at so far. A source is walked up to that size only,
so a set that grows or shifts while it is walked can never make the walk endless; a job
that leaves a set ahead of the offset makes the walk skip one job, and a job added at the
front (a new failure) or moved to another set makes it see one job twice. Pages and bulk
actions live with that, as the lists of Sidekiq and Oban do.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core import Client, InvalidArgumentError, keys
from ..core.client import shown_state
from . import masking
from .selection import START, STATES, JobFilter, Step

#: Candidates read by one Redis call (ZRANGE/LRANGE, and the HMGET pipeline after it).
SLICE = 500
#: Candidates one step looks at, at most, however few of them match.
BUDGET = 2_000
#: Queues and failure groups a walk over "everything" goes through, at most.
MAX_SOURCES = 10_000
#: The set of a queue holding each state a filter can name.
STATE_SETS = {
    "waiting": "work",
    "running": "locks",
    "stalled": "locks",
    "scheduled": "scheduled",
    "depends": "depends",
}
#: A queue's sets in the order a walk over a whole queue reads them.
QUEUE_ORDER = ("work", "locks", "scheduled", "depends")
#: States the job hash of a worker's held job can show.
HELD_STATES = ("", "running", "stalled")
CURSOR_VERSION = "w1"


@dataclass(frozen=True)
class Source:
    """One index of candidates, read by rank: a sorted set or a list."""

    key: str
    is_list: bool = False
    #: A sorted set read highest score first (a queue's work set: pop order).
    reverse: bool = False

    def read(self, redis: Any, offset: int, count: int) -> list[str]:
        """The candidates at ranks offset .. offset + count - 1."""
        last = offset + count - 1
        if self.is_list:
            return _texts(redis.lrange(self.key, offset, last))
        if self.reverse:
            return _texts(redis.zrevrange(self.key, offset, last))
        return _texts(redis.zrange(self.key, offset, last))


@dataclass(frozen=True)
class Cursor:
    """Where a walk stands: source index, offset, that source's size (-1 before), looked."""

    source: int = 0
    offset: int = 0
    end: int = -1
    looked: int = 0

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """The cursor a previous step wrote (`START` for the first step)."""
        if text == START:
            return cls()
        version, _, rest = text.partition(".")
        try:
            source, offset, end, looked = (int(part) for part in rest.split("."))
        except ValueError:
            source = offset = end = looked = -2
        if version != CURSOR_VERSION or min(source, offset, looked) < 0 or end < -1:
            raise InvalidArgumentError(f"not a search cursor: {text[:80]!r}")
        return cls(source, offset, end, looked)

    def text(self) -> str:
        """The cursor as opaque text."""
        return f"{CURSOR_VERSION}.{self.source}.{self.offset}.{self.end}.{self.looked}"


def check_filter(job_filter: JobFilter) -> None:
    """Raise InvalidArgumentError with a clear message for a filter nothing could satisfy."""
    if job_filter.state and job_filter.state not in STATES:
        raise InvalidArgumentError(
            f"unknown state {job_filter.state!r}; expected one of {', '.join(STATES)}"
        )
    if job_filter.group and job_filter.state not in ("", "failed"):
        raise InvalidArgumentError("a failure group holds failed jobs only: use state failed")
    if job_filter.queue and job_filter.state == "complete":
        raise InvalidArgumentError(
            "completed jobs keep no queue: leave the queue empty to find completed jobs"
        )
    for name in ("since", "until"):
        bound = getattr(job_filter, name)
        if bound is not None and not math.isfinite(bound):
            raise InvalidArgumentError(f"{name} must be a time, got {bound!r}")
    if (
        job_filter.since is not None
        and job_filter.until is not None
        and job_filter.since > job_filter.until
    ):
        raise InvalidArgumentError("the time range ends before it starts")


class FilterWalk:
    """The jobs a `JobFilter` matches, found a bounded step at a time (a `Selection`)."""

    def __init__(
        self, client: Client, job_filter: JobFilter, *, slice_size: int | None = None,
        budget: int | None = None,
    ) -> None:
        check_filter(job_filter)
        slice_size = SLICE if slice_size is None else slice_size
        budget = BUDGET if budget is None else budget
        if slice_size < 1 or budget < 1:
            raise InvalidArgumentError("slice_size and budget must be at least 1")
        self.client = client
        self.filter = job_filter
        self.slice_size = slice_size
        self.budget = budget
        self._masker = masking.masker()

    def step(self, cursor: str, limit: int) -> Step:
        """Look at the candidates after `cursor` (`START` first); at most `limit` matches."""
        if limit < 1:
            raise InvalidArgumentError(f"limit must be at least 1, got {limit!r}")
        at = Cursor.parse(cursor)
        sources = self.sources()
        sizes = self._sizes(sources)
        index, offset, end, looked = at.source, at.offset, at.end, at.looked
        found: list[str] = []
        budget = self.budget
        while index < len(sources) and budget > 0 and len(found) < limit:
            if end < 0:
                end = sizes[index]
            if offset >= end:
                index, offset, end = index + 1, 0, -1
                continue
            count = min(self.slice_size, end - offset, budget)
            jids = sources[index].read(self.client.redis, offset, count)
            matches, used = self._test(jids, limit - len(found))
            found += matches
            offset, looked, budget = offset + used, looked + used, budget - used
            if len(jids) < count and used == len(jids):
                # The source shrank below its recorded size: it has nothing more.
                index, offset, end = index + 1, 0, -1
        # Step over what is already exhausted, so a finished walk says so at once.
        while index < len(sources) and (offset >= end >= 0 or (end < 0 and not sizes[index])):
            index, offset, end = index + 1, 0, -1
        if index >= len(sources):
            return Step(jids=tuple(found), cursor=None, looked=looked, total=looked)
        current = end - offset if end >= 0 else sizes[index]
        left = max(current, 0) + sum(sizes[index + 1 :])
        next_cursor = Cursor(index, offset, end, looked).text()
        return Step(jids=tuple(found), cursor=next_cursor, looked=looked, total=looked + left)

    def sources(self) -> list[Source]:
        """The indexes this filter's candidates come from, in walk order."""
        wanted = self.filter
        redis = self.client.redis
        if wanted.group:
            return [Source(keys.failure_group(wanted.group), is_list=True)]
        if wanted.tag:
            return [Source(keys.tag(wanted.tag))]
        if wanted.worker and wanted.state in HELD_STATES:
            return [Source(keys.worker_jobs(wanted.worker))]
        if wanted.worker and wanted.state != "failed":
            # Only held and failed jobs name a worker.
            return []
        if wanted.state == "failed":
            return self._failure_sources()
        if wanted.state == "complete":
            return [Source(keys.COMPLETED, reverse=True)]
        queues = [wanted.queue] if wanted.queue else _texts(
            redis.zrange(keys.QUEUES, 0, MAX_SOURCES - 1)
        )
        if wanted.state:
            kind = STATE_SETS[wanted.state]
            return [_queue_source(queue, kind) for queue in queues]
        found = [_queue_source(queue, kind) for queue in queues for kind in QUEUE_ORDER]
        found += self._failure_sources()
        if not wanted.queue:
            found.append(Source(keys.COMPLETED, reverse=True))
        return found

    def _failure_sources(self) -> list[Source]:
        """Every failure group's list, by group name."""
        groups = sorted(_texts(self.client.redis.smembers(keys.FAILURES)))[:MAX_SOURCES]
        return [Source(keys.failure_group(group), is_list=True) for group in groups]

    def _sizes(self, sources: Sequence[Source]) -> list[int]:
        """How many candidates each source holds now (one pipelined round trip)."""
        with self.client.redis.pipeline(transaction=False) as pipe:
            for source in sources:
                if source.is_list:
                    pipe.llen(source.key)
                else:
                    pipe.zcard(source.key)
            return [int(size) for size in pipe.execute()]

    def _fields(self) -> list[str]:
        """The job hash fields the criteria need."""
        wanted = ["state", "expires", "queue", "klass", "worker", "time", "tags"]
        if self.filter.data_contains:
            wanted.append("data")
        if self.filter.worker:
            wanted.append("failure")
        return wanted

    def _test(self, jids: list[str], limit: int) -> tuple[list[str], int]:
        """(the first `limit` matching jids, how many candidates that took)."""
        prefix = self.filter.jid_prefix
        named = [jid for jid in jids if jid.startswith(prefix)]
        fields = self._fields()
        with self.client.redis.pipeline(transaction=False) as pipe:
            for jid in named:
                pipe.hmget(keys.job(jid), fields)
            replies = dict(zip(named, pipe.execute(), strict=True))
        now = self.client.now()
        matches: list[str] = []
        for used, jid in enumerate(jids, start=1):
            reply = replies.get(jid)
            if reply is None:
                continue
            if self._matches(dict(zip(fields, _optional(reply), strict=True)), now):
                matches.append(jid)
                if len(matches) >= limit:
                    return matches, used
        return matches, len(jids)

    def _matches(self, job: dict[str, str | None], now: float) -> bool:
        """Whether one job's fields meet every criterion."""
        wanted = self.filter
        if job["state"] is None:
            return False  # gone since the index was read
        # The plain comparisons first: most candidates fail one of them.
        if wanted.klass and job["klass"] != wanted.klass:
            return False
        if wanted.queue and job["queue"] != wanted.queue:
            return False
        if wanted.state and shown_state([job["state"], job["expires"]], now) != wanted.state:
            return False
        if wanted.worker and wanted.worker not in (job["worker"], _failure_worker(job)):
            return False
        if wanted.tag and wanted.tag not in _tags(job["tags"]):
            return False
        if (wanted.since is not None or wanted.until is not None) and not self._in_time(job):
            return False
        return not wanted.data_contains or self._data_has(job.get("data") or "")

    def _in_time(self, job: dict[str, str | None]) -> bool:
        """Whether the job's time in its state lies within the filter's bounds."""
        try:
            when = float(job["time"] or "")
        except ValueError:
            return False
        low, high = self.filter.since, self.filter.until
        return (low is None or when >= low) and (high is None or when <= high)

    def _data_has(self, raw: str) -> bool:
        """Whether the data holds the substring, also once its secrets are masked."""
        needle = self.filter.data_contains
        if needle not in raw:
            return False
        # Matching a masked value would let a search guess a secret a letter at a time.
        if needle not in self._masker.text(raw):
            return False
        try:
            masked = self._masker.data(json.loads(raw))
        except ValueError:
            return True
        return any(
            needle in json.dumps(masked, ensure_ascii=ascii_only, separators=separators)
            for ascii_only in (False, True)
            for separators in ((", ", ": "), (",", ":"))
        )


def _queue_source(queue: str, kind: str) -> Source:
    """One set of a queue; waiting jobs in pop order (highest score first)."""
    return Source(keys.queue_set(queue, kind), reverse=kind == "work")


def _tags(raw: str | None) -> list[str]:
    """A job's tags from their JSON text (`{}` when it has none)."""
    try:
        tags = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(tag) for tag in tags] if isinstance(tags, list) else []


def _failure_worker(job: dict[str, str | None]) -> str | None:
    """The worker a failed job failed on (its hash keeps it in `failure` only)."""
    try:
        failure = json.loads(job.get("failure") or "{}")
    except ValueError:
        return None
    worker = failure.get("worker") if isinstance(failure, dict) else None
    return str(worker) if worker else None


def _optional(values: Sequence[Any]) -> list[str | None]:
    """HMGET reply items as text, None kept."""
    return [None if v is None else _texts([v])[0] for v in values]


def _texts(values: Any) -> list[str]:
    """Redis reply items as text, whatever the connection's decode_responses is."""
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values]
