"""Listeners told how each enqueue was sent, for development tools (the debug toolbar's
panel); the enqueue path checks one list and calls nothing while it is empty."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from .request import Enqueue

#: How an enqueue's submissions were sent: put now, run inline (immediate mode), put when
#: the transaction commits, or written to the outbox in the transaction.
Route = Literal["now", "immediate", "on_commit", "outbox"]
#: Told of one enqueue once its route is chosen (before a put now or an inline run).
Listener = Callable[[Enqueue, Route], None]

#: The registered listeners; `dispatch` reads it on every enqueue, so keep it empty unless
#: something records enqueues.
LISTENERS: list[Listener] = []

logger = logging.getLogger("django_qless")


def dispatched(request: Enqueue, route: Route) -> None:
    """Tell every listener of an enqueue; one that raises is logged, never raised."""
    for listener in tuple(LISTENERS):
        try:
            listener(request, route)
        except Exception:  # a development tool must never lose or fail a job
            logger.exception("qless: enqueue listener %r failed", listener)
