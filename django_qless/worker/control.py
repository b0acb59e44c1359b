"""What the admin asked this worker process to do (`core.control`): pause, resume, stop.

Orders arrive on the monitor thread, on the connection it already keeps subscribed to the
worker's qless channel. Pause only stops new pops (the running jobs go on); stop is the
graceful stop a SIGTERM asks for. The job thread reads `paused_by` before each pop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core.control import PAUSE, RESUME, STOP, Order
from .state import StopState

logger = logging.getLogger("django_qless.worker")


class WorkerControl:
    """The pause flag and the stop request the admin's orders set."""

    def __init__(self, name: str, stop: StopState) -> None:
        self.name = name
        self.stop = stop
        #: Who paused the worker (None while it pops); a plain attribute, read without a
        #: lock: one thread writes it and a stale read only delays a pop by one slice.
        self.paused_by: str | None = None
        #: Called after each order (the presence publishes the change at once).
        self.changed: Callable[[], None] = lambda: None

    @property
    def paused(self) -> bool:
        """True while the worker must not pop."""
        return self.paused_by is not None

    def apply(self, order: Order) -> None:
        """Carry out one order."""
        if order.action == PAUSE:
            self.paused_by = order.by
            logger.info("qless worker %s: paused by %s; running jobs go on", self.name,
                        order.by)
        elif order.action == RESUME:
            self.paused_by = None
            logger.info("qless worker %s: resumed by %s", self.name, order.by)
        elif order.action == STOP:
            self.stop.request(f"stop requested by {order.by}")
        self.changed()
