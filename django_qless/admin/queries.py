"""Read-only queries of the admin pages.

The pages must show whatever any qless client wrote, so these reads skip the core's
argument checks (which rightly refuse, say, a queue name with spaces for new writes)
and send names to the script as they are. The jid-only list queries (`failed`, `tag
get`) avoid fetching every job. Tracked jobs and waiting jobs are paged with read-only
Redis reads: the script's `track` returns every tracked job at once, and `peek` has no
offset.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..core import Client, Job, QueueCounts, RecurringJob, Stats, WorkerJobs
from ..core import validation as check
from ..core.records import as_list

TRACKED_KEY = "ql:tracked"
#: Tracked jobs whose state is looked up for the per-state counts and tabs.
TRACKED_STATE_LIMIT = 10_000
TRACKED_STATES = ("running", "waiting", "scheduled", "stalled", "depends", "failed", "complete")


def _text(value: Any) -> str:
    """A Redis reply item as text, whatever the connection's decode_responses is."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


#: Jids per `multiget` call.
CHUNK = 500


def get_job(client: Client, jid: str) -> Job | None:
    """A job by jid, or None."""
    reply = client.call("get", jid)
    return None if reply is None else Job(client, json.loads(reply))


def get_jobs(client: Client, jids: Sequence[str]) -> list[Job]:
    """Jobs by jid, in order, skipping those that no longer exist."""
    jobs: list[Job] = []
    for start in range(0, len(jids), CHUNK):
        chunk = list(jids[start : start + CHUNK])
        jobs += client.jobs_from_json(client.call("multiget", *chunk))
    return jobs


def get_recurring(client: Client, jid: str) -> RecurringJob | None:
    """A recurring job template by jid, or None."""
    reply = client.call("recur.get", jid)
    return None if reply is None else RecurringJob(client, json.loads(reply))


def queue_counts(client: Client, name: str) -> QueueCounts:
    """A queue's counts by state."""
    return QueueCounts.from_json(json.loads(client.call("queues", name)))


def queue_jids(client: Client, name: str, state: str, offset: int, count: int) -> list[str]:
    """A page of a queue's jids in `state` (waiting: in pop order, from the work set)."""
    start, size = check.offset(offset), check.count(count)
    if state == "waiting":
        found = client.redis.zrevrange(f"ql:q:{name}-work", start, start + size - 1)
    else:
        found = client.call("jobs", state, name, start, size)
    return [_text(jid) for jid in as_list(found)]


def queue_stats(client: Client, name: str, when: float) -> Stats:
    """A queue's wait/run statistics for the day containing `when`."""
    return Stats.from_json(json.loads(client.call("stats", name, when)))


def worker_jobs(client: Client, name: str) -> WorkerJobs:
    """The jids a worker holds: live leases and expired ones."""
    reply = json.loads(client.call("workers", name))
    return WorkerJobs(
        jobs=tuple(str(j) for j in as_list(reply.get("jobs"))),
        stalled=tuple(str(j) for j in as_list(reply.get("stalled"))),
    )


def group_jids(client: Client, group: str, start: int, count: int) -> tuple[int, list[str]]:
    """(size of the failure group, jids from `start`), newest first."""
    reply = json.loads(client.call("failed", group, check.offset(start), check.count(count)))
    return int(reply.get("total", 0)), [str(j) for j in as_list(reply.get("jobs"))]


def tag_jids(client: Client, tag: str, offset: int, count: int) -> tuple[int, list[str]]:
    """(number of jobs with the tag, jids from `offset`)."""
    reply = json.loads(client.call("tag", "get", tag, check.offset(offset), check.count(count)))
    return int(reply.get("total", 0)), [str(j) for j in as_list(reply.get("jobs"))]


def tracked_total(client: Client) -> int:
    """How many jids are tracked."""
    return int(client.redis.zcard(TRACKED_KEY))


def tracked_jids(client: Client, offset: int, count: int) -> list[str]:
    """Tracked jids, most recently tracked first."""
    start = check.offset(offset)
    found = client.redis.zrevrange(TRACKED_KEY, start, start + check.count(count) - 1)
    return [_text(jid) for jid in found]


def tracked_states(client: Client) -> list[tuple[str, str]]:
    """(jid, state) of the most recent `TRACKED_STATE_LIMIT` tracked jids.

    A running job whose lease has run out counts as stalled; a job that no longer
    exists counts as "gone".
    """
    jids = [
        _text(jid) for jid in client.redis.zrevrange(TRACKED_KEY, 0, TRACKED_STATE_LIMIT - 1)
    ]
    pipe = client.redis.pipeline(transaction=False)
    for jid in jids:
        pipe.hmget(f"ql:j:{jid}", "state", "expires")
    now = client.now()
    return [(jid, _state(fields, now)) for jid, fields in zip(jids, pipe.execute(), strict=True)]


def _state(fields: list[Any], now: float) -> str:
    """The state shown for a tracked job's (state, expires) fields."""
    state, expires = (_text(f) if f is not None else None for f in fields)
    if state is None:
        return "gone"
    if state == "running" and _number(expires) <= now:
        return "stalled"
    return state


def _number(text: str | None) -> float:
    """A numeric hash field; infinity when absent or unreadable (never counted as expired)."""
    try:
        return float(text) if text else float("inf")
    except ValueError:
        return float("inf")


def tracked_counts(states: list[tuple[str, str]]) -> dict[str, int]:
    """How many tracked jobs are in each state (every state listed, zero included)."""
    counted = Counter(state for _, state in states)
    return {state: counted.get(state, 0) for state in (*TRACKED_STATES, "gone")}


def config_values(client: Client) -> dict[str, str]:
    """Every config value as text (defaults overlaid with stored values), unchecked.

    The pages show what is stored even when another client wrote a value the core's
    checks would refuse.
    """
    stored = json.loads(client.call("config.get")) or {}
    return {str(key): _plain(value) for key, value in sorted(stored.items())}


def _plain(value: Any) -> str:
    """A config value as text (7.0 rather than 7.0: integers without a fraction)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
