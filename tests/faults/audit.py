"""Structure audit of a qless database, run after every fault test.

Checks (reliability plan §4.0): each job is in exactly one place (a queue's work, locks,
scheduled or depends set, `ql:completed`, or one `ql:f:<group>` list), its `state` agrees
with that place, no lock belongs to a worker that is not alive, `remaining` >= -1, and no
numeric field or score is NaN. Reads in pipelined batches, so it also suits 100,000 jobs.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import redis

QUEUE_SETS = ("work", "locks", "scheduled", "depends")
#: Where each state must be found.
PLACE_OF_STATE = {"waiting": "work", "running": "locks", "stalled": "locks",
                  "scheduled": "scheduled", "depends": "depends", "complete": "completed",
                  "failed": "failed"}
JOB_KEY_SUFFIXES = ("-history", "-dependencies", "-dependents")
NUMERIC_FIELDS = ("priority", "retries", "remaining", "expires", "time")
BATCH = 1000


@dataclass
class Audit:
    """What the audit found: counts by state, and every problem as one line."""

    jobs: int = 0
    states: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    #: jid -> (state, queue, worker, failure group) of every job.
    found: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    def summary(self) -> str:
        """One line: clean or the first problems."""
        if self.clean:
            return f"clean ({self.jobs} jobs: {dict(self.states)})"
        return f"{len(self.problems)} problems: " + "; ".join(self.problems[:5])


def audit(client: redis.Redis, alive: Callable[[str], bool] | None = None) -> Audit:
    """Audit every job; `alive(worker_name)` says whether a lock holder still exists."""
    result = Audit()
    places = _places(client, result)
    jids = [key[len("ql:j:"):] for key in _job_keys(client)]
    for start in range(0, len(jids), BATCH):
        batch = jids[start:start + BATCH]
        pipe = client.pipeline(transaction=False)
        for jid in batch:
            pipe.hgetall(f"ql:j:{jid}")
        for jid, fields in zip(batch, pipe.execute(), strict=True):
            _check_job(result, jid, _decoded(fields), places.pop(jid, []), alive)
    for jid, where in places.items():
        result.problems.append(f"{jid}: listed in {where} but has no job hash")
    return result


def _places(client: redis.Redis, result: Audit) -> dict[str, list[tuple[str, str]]]:
    """jid -> every (place, queue-or-group) holding it; NaN scores are problems."""
    places: dict[str, list[tuple[str, str]]] = {}
    queues = {_text(name) for name in client.zrange("ql:queues", 0, -1)}
    for key in client.scan_iter(match="ql:q:*", count=1000):
        name = _text(key)[len("ql:q:"):]
        queues.add(name.rsplit("-", 1)[0])
    pipe = client.pipeline(transaction=False)
    keys = [(f"ql:q:{queue}-{kind}", kind, queue) for queue in sorted(queues)
            for kind in QUEUE_SETS]
    for key, _, _ in keys:
        pipe.zrange(key, 0, -1, withscores=True)
    pipe.zrange("ql:completed", 0, -1, withscores=True)
    replies = pipe.execute()
    for (key, kind, queue), members in zip(keys, replies[:-1], strict=True):
        _place(places, result, key, members, kind, queue)
    _place(places, result, "ql:completed", replies[-1], "completed", "")
    groups = {_text(g) for g in client.smembers("ql:failures")}
    groups |= {_text(k)[len("ql:f:"):] for k in client.scan_iter(match="ql:f:*", count=1000)}
    for group in sorted(groups):
        for jid in client.lrange(f"ql:f:{group}", 0, -1):
            places.setdefault(_text(jid), []).append(("failed", group))
    return places


def _place(places: dict[str, list[tuple[str, str]]], result: Audit, key: str,
           members: Iterable[tuple[bytes | str, float]], kind: str, owner: str) -> None:
    """Record the members of one sorted set."""
    for member, score in members:
        jid = _text(member)
        if math.isnan(score):
            result.problems.append(f"{jid}: NaN score in {key}")
        places.setdefault(jid, []).append((kind, owner))


def _job_keys(client: redis.Redis) -> list[str]:
    """Every `ql:j:<jid>` job hash (not its history or dependency sets)."""
    return sorted(
        text for key in client.scan_iter(match="ql:j:*", count=1000)
        if not (text := _text(key)).endswith(JOB_KEY_SUFFIXES)
    )


def _check_job(result: Audit, jid: str, job: dict[str, str], where: list[tuple[str, str]],
               alive: Callable[[str], bool] | None) -> None:
    """All the checks of one job."""
    state, queue, worker = job.get("state", ""), job.get("queue", ""), job.get("worker", "")
    group = _failure_group(job)
    result.jobs += 1
    result.states[state] += 1
    result.found[jid] = (state, queue, worker, group)
    problems = result.problems
    if len(where) != 1:
        problems.append(f"{jid} ({state}): in {len(where)} places {where}")
    expected = PLACE_OF_STATE.get(state)
    if expected is None:
        problems.append(f"{jid}: unknown state {state!r}")
    elif where and where[0][0] != expected:
        problems.append(f"{jid}: state {state} but found in {where[0][0]}")
    elif where and expected in QUEUE_SETS and where[0][1] != queue:
        problems.append(f"{jid}: queue field {queue!r} but in a set of {where[0][1]!r}")
    elif where and expected == "failed" and where[0][1] != group:
        problems.append(f"{jid}: failure group {group!r} but in ql:f:{where[0][1]}")
    for name in NUMERIC_FIELDS:
        raw = job.get(name, "")
        if raw == "":
            continue
        try:
            value = float(raw)
        except ValueError:
            problems.append(f"{jid}: {name}={raw!r} is not a number")
            continue
        if math.isnan(value):
            problems.append(f"{jid}: {name} is NaN")
    remaining = job.get("remaining", "0")
    if _number(remaining) < -1:
        problems.append(f"{jid}: remaining={remaining} < -1")
    if state == "running" and alive is not None and not alive(worker):
        problems.append(f"{jid}: locked by {worker!r}, which is not alive")


def _failure_group(job: dict[str, str]) -> str:
    """The failure group stored in the job, or ''."""
    try:
        failure = json.loads(job.get("failure") or "{}")
    except ValueError:
        return ""
    return str(failure.get("group", "")) if isinstance(failure, dict) else ""


def _number(raw: str) -> float:
    """A stored number, NaN when unreadable (never compares as valid)."""
    try:
        return float(raw)
    except ValueError:
        return math.nan


def _decoded(fields: dict[bytes | str, bytes | str]) -> dict[str, str]:
    """A hash reply as str -> str."""
    return {_text(key): _text(value) for key, value in fields.items()}


def _text(value: bytes | str) -> str:
    """Decode a Redis reply item."""
    return value.decode() if isinstance(value, bytes) else value
