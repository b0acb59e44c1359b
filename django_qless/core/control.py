"""Control messages: the admin asks one worker process to pause, resume or stop.

A message is JSON published on the worker's control channel (`keys.worker_control`):
`{"event": "django_qless:control", "action": ..., "by": ..., "at": ...}`. Only a
`qless_worker` process of that name subscribes there, so the count PUBLISH returns tells
whether one heard it; other clients' workers never see these messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import keys

if TYPE_CHECKING:
    from .client import Client

EVENT = "django_qless:control"
PAUSE = "pause"
RESUME = "resume"
STOP = "stop"
ACTIONS = (PAUSE, RESUME, STOP)


@dataclass(frozen=True)
class Order:
    """One control message: what to do, who asked and when (epoch seconds)."""

    action: str
    by: str
    at: float

    def encode(self) -> str:
        """The message text."""
        return json.dumps({"event": EVENT, "action": self.action, "by": self.by, "at": self.at})


def send(client: Client, worker: str, action: str, by: str) -> int:
    """Publish an order to one worker; returns how many processes heard it (0: none)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown control action {action!r}; expected one of {ACTIONS}")
    order = Order(action, by, client.now())
    return int(client.redis.publish(keys.worker_control(worker), order.encode()))


def decode(data: Any) -> Order | None:
    """The order in a message's data, or None for anything else."""
    try:
        payload = json.loads(data)
    except (TypeError, ValueError):
        return None
    if not isinstance(payload, dict) or payload.get("event") != EVENT:
        return None
    action, by, at = payload.get("action"), payload.get("by"), payload.get("at")
    if action not in ACTIONS or not isinstance(by, str):
        return None
    return Order(action, by, float(at) if isinstance(at, (int, float)) else 0.0)
