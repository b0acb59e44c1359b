"""Telling a dead pub/sub connection from a quiet one.

A half-open connection (a blackholed network, a NAT or firewall that forgot the flow)
reads nothing and raises nothing, exactly like a channel nobody publishes on. So the
reader PINGs it now and then; a PING still unanswered when the next is due means the
connection is dead, and the reader subscribes again on a new one.
"""

from __future__ import annotations

import time
from typing import Any

import redis
import redis.client


class PingCheck:
    """PINGs a subscribed connection every `every` seconds and notices an unanswered PING."""

    def __init__(self, every: float) -> None:
        self.every = every
        self._pinged: float | None = None
        self._due = 0.0

    def restart(self) -> None:
        """A fresh subscription: the first PING is due one interval from now."""
        self._pinged = None
        self._due = time.monotonic() + self.every

    def check(self, pubsub: redis.client.PubSub) -> None:
        """PING when due; raise `ConnectionError` when the previous PING got no answer."""
        now = time.monotonic()
        if now < self._due:
            return
        if self._pinged is not None:
            raise redis.ConnectionError(f"no answer to a PING in {now - self._pinged:.1f}s")
        pubsub.ping()
        self._pinged = now
        self._due = now + self.every

    def answered(self, message: dict[str, Any]) -> bool:
        """True (and the connection alive) when `message` is the answer to our PING."""
        if message.get("type") != "pong":
            return False
        self._pinged = None
        return True
