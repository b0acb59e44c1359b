"""The order in which a worker tries its queues on each pop round."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Generic, TypeVar

from ..conf import Strategy

T = TypeVar("T")


class QueueOrder(Generic[T]):
    """`ordered`: always first to last; `round-robin`: start after the last queue that gave a
    job; `shuffle`: a fresh random order every round."""

    def __init__(
        self, queues: Sequence[T], strategy: Strategy, rng: random.Random | None = None
    ) -> None:
        if not queues:
            raise ValueError("a worker needs at least one queue")
        self.queues = tuple(queues)
        self.strategy = strategy
        self.rng = rng or random.Random()  # noqa: S311 - fairness, not security
        self._start = 0

    def round(self) -> Sequence[T]:
        """The queues to try, in order, for the next pop."""
        if self.strategy == "shuffle":
            return self.rng.sample(self.queues, len(self.queues))
        if self.strategy == "round-robin" and self._start:
            return self.queues[self._start :] + self.queues[: self._start]
        return self.queues

    def served(self, queue: T) -> None:
        """Note that `queue` gave a job (round-robin moves on to the next one)."""
        if self.strategy == "round-robin":
            self._start = (self.queues.index(queue) + 1) % len(self.queues)
