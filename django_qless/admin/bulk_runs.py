"""Bulk runs ("select all N matching"), kept in Redis so a closed page can resume them.

A run first collects: it walks its selection a bounded step at a time and adds the
matches to its own sorted set, so the jobs it acts on are fixed before anything is done
(moving or retrying them cannot shift the walk). Once confirmed, it applies: each step
takes the next chunk of that set by rank. One request at a time works on a run (a lock
with a TTL), and every key expires `TTL` seconds after the run last moved.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis

from ..core import Client
from ..core.keys import OWN_PREFIX

#: Index of the runs: run id -> when it started.
INDEX = f"{OWN_PREFIX}bulks"
#: How long a run is kept after its last step (seconds).
TTL = 7 * 24 * 3600
#: How long one step may hold a run before another request may take it (ms).
LOCK_MS = 60_000
#: Problems kept per run (jid: why it was not done), the newest first.
PROBLEMS_KEPT = 1000

#: The phases of a run, in order (or abandoned at any point before done).
COLLECT, READY, APPLY, DONE, ABANDONED = "collect", "ready", "apply", "done", "abandoned"
FINISHED = (DONE, ABANDONED)


def run_key(run_id: str) -> str:
    """The hash of one run."""
    return f"{OWN_PREFIX}bulk:{run_id}"


def jids_key(run_id: str) -> str:
    """The matched jids of a run: jid -> rank at collection."""
    return f"{run_key(run_id)}:jids"


def also_key(run_id: str) -> str:
    """The dependents a cancel takes along (found while collecting, and those it did)."""
    return f"{run_key(run_id)}:also"


def problems_key(run_id: str) -> str:
    """Why jobs were not done ("jid: reason"), newest first."""
    return f"{run_key(run_id)}:problems"


def lock_key(run_id: str) -> str:
    """Held by the one request working on a run."""
    return f"{run_key(run_id)}:lock"


def all_keys(run_id: str) -> list[str]:
    """Every key of a run but its lock."""
    return [run_key(run_id), jids_key(run_id), also_key(run_id), problems_key(run_id)]


@dataclass(frozen=True)
class Run:
    """One bulk run as stored."""

    id: str
    #: A key of `bulk_all.BULK_ACTIONS`.
    action: str
    #: The action's input (queue, priority, tags), as validated.
    data: Mapping[str, Any]
    #: The selection: a filter's query string, or "tracked".
    source: str
    #: The selection in words.
    described: str
    phase: str
    cursor: str
    looked: int
    total: int | None
    matched: int
    applied: int
    done: int
    problems: int
    chunks: int
    by: str
    started: float
    updated: float
    #: The list the run was started from (where the page goes back to).
    back: str

    @property
    def finished(self) -> bool:
        """Whether nothing more will be done."""
        return self.phase in FINISHED

    @property
    def left(self) -> int:
        """Matched jobs not yet taken by a chunk."""
        return max(self.matched - self.applied, 0)


def text(value: Any) -> str:
    """A Redis reply as text."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def create(
    client: Client, *, action: str, data: Mapping[str, Any], source: str, described: str,
    by: str, back: str,
) -> str:
    """Store a new run in its collect phase; its id."""
    run_id = secrets.token_hex(8)
    now = client.now()
    fields: dict[Any, Any] = {
        "action": action, "data": json.dumps(dict(data)), "source": source,
        "described": described, "phase": COLLECT, "cursor": "", "looked": 0, "total": "",
        "applied": 0, "done": 0, "problems": 0, "chunks": 0, "by": by, "started": now,
        "updated": now, "back": back,
    }
    with client.redis.pipeline(transaction=True) as pipe:
        pipe.hset(run_key(run_id), mapping=fields)
        pipe.expire(run_key(run_id), TTL)
        pipe.zadd(INDEX, {run_id: now})
        # Index entries of runs whose keys have expired go once they are past the TTL.
        pipe.zremrangebyscore(INDEX, "-inf", now - TTL)
        pipe.execute()
    return run_id


def load(client: Client, run_id: str) -> Run | None:
    """A run by id, or None (unknown or expired)."""
    if not run_id.isalnum():
        return None
    with client.redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(run_key(run_id))
        pipe.zcard(jids_key(run_id))
        raw, matched = pipe.execute()
    if not raw:
        return None
    got = {text(k): text(v) for k, v in raw.items()}
    return Run(
        id=run_id, action=got["action"], data=json.loads(got["data"]), source=got["source"],
        described=got["described"], phase=got["phase"], cursor=got["cursor"],
        looked=int(got["looked"]), total=int(got["total"]) if got["total"] else None,
        matched=int(matched), applied=int(got["applied"]), done=int(got["done"]),
        problems=int(got["problems"]), chunks=int(got["chunks"]), by=got["by"],
        started=float(got["started"]), updated=float(got["updated"]), back=got["back"],
    )


def recent(client: Client, count: int = 25) -> list[Run]:
    """The newest runs still kept, newest first."""
    ids = [text(i) for i in client.redis.zrevrange(INDEX, 0, count - 1)]
    return [run for run in (load(client, i) for i in ids) if run is not None]


@contextmanager
def claimed(client: Client, run_id: str) -> Iterator[bool]:
    """Hold a run's lock for one step; yields False when another request holds it."""
    token = secrets.token_hex(8)
    held = bool(client.redis.set(lock_key(run_id), token, nx=True, px=LOCK_MS))
    try:
        yield held
    finally:
        if held and text(client.redis.get(lock_key(run_id)) or b"") == token:
            client.redis.delete(lock_key(run_id))


def save_collected(
    client: Client, run: Run, jids: list[str], also: list[str], *, cursor: str | None,
    looked: int, total: int | None,
) -> None:
    """Add one step's matches (ranked after those kept; duplicates dropped), and move on."""
    rank = run.matched
    with client.redis.pipeline(transaction=True) as pipe:
        if jids:
            pipe.zadd(jids_key(run.id), {jid: rank + i for i, jid in enumerate(jids)}, nx=True)
        if also:
            pipe.sadd(also_key(run.id), *also)
        pipe.hset(run_key(run.id), mapping={
            "cursor": cursor or "", "looked": looked, "total": "" if total is None else total,
            "phase": READY if cursor is None else COLLECT, "updated": client.now(),
        })
        _refresh(pipe, run.id)
        pipe.execute()


def next_chunk(client: Client, run: Run, size: int) -> list[str]:
    """The next `size` matched jids (by rank), not yet counted as taken: `save_applied`
    counts them once acted on, so a request that dies mid-chunk leaves them to the next."""
    found = client.redis.zrange(jids_key(run.id), run.applied, run.applied + size - 1)
    client.redis.hset(run_key(run.id), mapping={"phase": APPLY, "updated": client.now()})
    return [text(j) for j in found]


def save_applied(client: Client, run: Run, taken: int, done: int, problems: list[str]) -> None:
    """Count one chunk of `taken` jids as taken, and its outcome; the run is done once every
    match was taken."""
    with client.redis.pipeline(transaction=True) as pipe:
        pipe.hset(run_key(run.id), "applied", run.applied + taken)
        pipe.hincrby(run_key(run.id), "done", done)
        pipe.hincrby(run_key(run.id), "problems", len(problems))
        pipe.hincrby(run_key(run.id), "chunks", 1)
        if problems:
            pipe.lpush(problems_key(run.id), *problems)
            pipe.ltrim(problems_key(run.id), 0, PROBLEMS_KEPT - 1)
        pipe.execute()
    fresh = load(client, run.id)
    phase = DONE if fresh is not None and fresh.left == 0 else APPLY
    with client.redis.pipeline(transaction=True) as pipe:
        pipe.hset(run_key(run.id), mapping={"phase": phase, "updated": client.now()})
        _refresh(pipe, run.id)
        pipe.execute()


def set_phase(client: Client, run_id: str, phase: str) -> None:
    """Move a run to another phase (confirmed, abandoned)."""
    with client.redis.pipeline(transaction=True) as pipe:
        pipe.hset(run_key(run_id), mapping={"phase": phase, "updated": client.now()})
        _refresh(pipe, run_id)
        pipe.execute()


def also_sample(client: Client, run_id: str, count: int) -> tuple[int, list[str]]:
    """How many dependents a cancel takes along, and up to `count` of them."""
    total = int(client.redis.scard(also_key(run_id)))
    sample = client.redis.srandmember(also_key(run_id), count) if total else []
    return total, sorted(text(j) for j in sample or [])


def add_cancelled_along(client: Client, run_id: str, jids: list[str]) -> None:
    """Remember the dependents a cancel chunk took along."""
    if jids:
        client.redis.sadd(also_key(run_id), *jids)


def cancelled_along(client: Client, run_id: str, jids: list[str]) -> set[str]:
    """Which of `jids` a cancel run took along with a job they waited on."""
    if not jids:
        return set()
    found = client.redis.smismember(also_key(run_id), jids)
    return {jid for jid, member in zip(jids, found, strict=True) if member}


def problem_lines(client: Client, run_id: str, count: int = 50) -> list[str]:
    """The newest reasons jobs were not done."""
    return [text(line) for line in client.redis.lrange(problems_key(run_id), 0, count - 1)]


def matched_sample(client: Client, run_id: str, count: int = 20) -> list[str]:
    """The first matched jids (for the confirmation)."""
    return [text(j) for j in client.redis.zrange(jids_key(run_id), 0, count - 1)]


def _refresh(pipe: redis.client.Pipeline, run_id: str) -> None:
    """Keep every key of a run for `TTL` more seconds."""
    for key in all_keys(run_id):
        pipe.expire(key, TTL)
