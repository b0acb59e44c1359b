"""Deploy markers: a label and a time, recorded at each deploy and drawn on every chart."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

from redis import Redis

from . import keys
from .exceptions import InvalidArgumentError

#: Markers kept: the newest; an older one is dropped when a new one is recorded.
KEPT = 1000
#: Longest label, in characters (it is drawn on a chart).
MAX_LABEL = 200


@dataclass(frozen=True)
class Deploy:
    """One deploy: what was deployed, and when (epoch seconds)."""

    label: str
    at: float


def mark_deploy(redis: Redis, label: str, at: float) -> Deploy:
    """Record a deploy at `at`; refuses an empty or over-long label before writing."""
    label = label.strip()
    if not label or len(label) > MAX_LABEL or "\n" in label:
        raise InvalidArgumentError(
            f"A deploy label is one line of 1 to {MAX_LABEL} characters: {label!r}")
    member = json.dumps({"label": label, "at": at}, sort_keys=True)
    with redis.pipeline(transaction=True) as pipe:
        pipe.zadd(keys.DEPLOYS, {member: at})
        # Bounded: only the newest `KEPT` markers stay.
        pipe.zremrangebyrank(keys.DEPLOYS, 0, -KEPT - 1)
        pipe.execute()
    return Deploy(label, at)


def deploys_between(redis: Redis, start: float, end: float) -> list[Deploy]:
    """The deploys recorded from `start` to `end` (epoch seconds), oldest first."""
    found = []
    for raw in redis.zrangebyscore(keys.DEPLOYS, start, end):
        entry = json.loads(cast(bytes, raw))
        found.append(Deploy(str(entry["label"]), float(entry["at"])))
    return found
