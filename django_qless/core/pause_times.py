"""Since when each paused queue has been paused, in a hash of our own (`keys.PAUSED_SINCE`).

qless keeps only the set of paused queues, no time. The admin records the moment it pauses
a queue; a queue paused by another client is dated from when the overview first saw it
paused, and the entry says which. Entries of queues no longer paused are dropped as seen.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import keys

if TYPE_CHECKING:
    from .client import Client

#: Who dated the pause: the admin's pause action, or the overview noticing it.
ADMIN = "admin"
SEEN = "seen"


@dataclass(frozen=True)
class PausedSince:
    """When a queue was paused (or first seen paused), and which of the two it is."""

    at: float
    by: str

    def value(self) -> str:
        """The hash value (JSON)."""
        return json.dumps({"at": self.at, "by": self.by})

    @classmethod
    def parse(cls, raw: Any) -> PausedSince | None:
        """A stored value read back; None when malformed."""
        try:
            found = json.loads(raw)
            return cls(float(found["at"]), str(found["by"]))
        except (ValueError, TypeError, KeyError):
            return None


def record_pause(client: Client, queue: str, at: float) -> None:
    """The admin paused `queue` at `at` (an earlier date is kept: it was paused already)."""
    client.redis.hsetnx(keys.PAUSED_SINCE, queue, PausedSince(at, ADMIN).value())


def record_unpause(client: Client, queue: str) -> None:
    """The admin unpaused `queue`: its date goes."""
    client.redis.hdel(keys.PAUSED_SINCE, queue)


def observe(client: Client, paused: Collection[str], now: float) -> dict[str, PausedSince]:
    """Since when each of the `paused` queues is paused: dated now if never seen before, and
    entries of queues not paused any more dropped (one HGETALL, at most one write each)."""
    stored = {_text(name): PausedSince.parse(raw)
              for name, raw in client.redis.hgetall(keys.PAUSED_SINCE).items()}
    found = {name: since for name, since in stored.items() if since is not None and name in paused}
    gone = [name for name in stored if name not in found]
    new = {name: PausedSince(now, SEEN) for name in paused if name not in found}
    if gone or new:
        pipe = client.redis.pipeline(transaction=False)
        if gone:
            pipe.hdel(keys.PAUSED_SINCE, *gone)
        for name, since in new.items():
            pipe.hsetnx(keys.PAUSED_SINCE, name, since.value())
        pipe.execute()
    return {**new, **found}


def _text(value: Any) -> str:
    """A reply value as text, whether or not the connection decodes responses."""
    return value.decode() if isinstance(value, bytes) else str(value)
