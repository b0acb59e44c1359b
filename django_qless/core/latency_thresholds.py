"""Per-queue latency thresholds: how long a queue's next job may wait before the overview
says so. Stored in a hash of our own (`keys.LATENCY_THRESHOLDS`: queue -> seconds), never
in `ql:config`, which other qless clients list and validate as theirs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from . import keys

if TYPE_CHECKING:
    from .client import Client


def read_all(client: Client) -> dict[str, float]:
    """Queue -> its own threshold in seconds (0: never flagged); malformed entries skipped.

    One HGETALL: the hash holds an entry only for each queue given one in the admin."""
    found = {}
    for name, raw in client.redis.hgetall(keys.LATENCY_THRESHOLDS).items():
        seconds = parse(raw)
        if seconds is not None:
            found[_text(name)] = seconds
    return found


def read(client: Client, queue: str) -> float | None:
    """One queue's own threshold, None when it uses the default."""
    return parse(client.redis.hget(keys.LATENCY_THRESHOLDS, queue))


def write(client: Client, queue: str, seconds: float | None) -> None:
    """Set one queue's threshold (None: back to the default)."""
    if seconds is None:
        client.redis.hdel(keys.LATENCY_THRESHOLDS, queue)
        return
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a latency threshold is a number of seconds >= 0, got {seconds!r}")
    client.redis.hset(keys.LATENCY_THRESHOLDS, queue, repr(float(seconds)))


def parse(raw: Any) -> float | None:
    """A stored value as seconds; None when absent or not a finite number >= 0."""
    if raw is None:
        return None
    try:
        seconds = float(_text(raw))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _text(value: Any) -> str:
    """A reply value as text, whether or not the connection decodes responses."""
    return value.decode() if isinstance(value, bytes) else str(value)
