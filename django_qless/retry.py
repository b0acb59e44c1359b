"""Retry policies: which exceptions to retry, and how long to wait before each retry.

qless counts the retries (`retries` on the job, `remaining` left); the policy only decides
whether an exception is worth retrying and the delay passed to qless `retry`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .exceptions import InvalidJobError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: `backoff * factor**(attempt-1)`, capped at `max_delay`."""

    backoff: float = 10.0
    factor: float = 2.0
    max_delay: float = 3600.0
    #: Fraction of the delay added or removed at random (0 = exact, 0.1 = +/-10%).
    jitter: float = 0.1
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    give_up_on: tuple[type[BaseException], ...] = ()
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, minimum in (("backoff", 0.0), ("factor", 1.0), ("max_delay", 0.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                math.isfinite(value) and value >= minimum
            ):
                raise InvalidJobError(f"RetryPolicy.{name} must be a number >= {minimum}")
        if isinstance(self.jitter, bool) or not 0 <= self.jitter <= 1:
            raise InvalidJobError("RetryPolicy.jitter must be between 0 and 1")
        for name in ("retry_on", "give_up_on"):
            classes = getattr(self, name)
            if not isinstance(classes, tuple) or not all(
                isinstance(c, type) and issubclass(c, BaseException) for c in classes
            ):
                raise InvalidJobError(f"RetryPolicy.{name} must be a tuple of exception classes")

    def should_retry(self, exc: BaseException) -> bool:
        """True when `exc` is one to retry and not one to give up on."""
        return isinstance(exc, self.retry_on) and not isinstance(exc, self.give_up_on)

    def delay_for(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1 = the first retry)."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        # Cap the exponent first: factor**attempt overflows long before max_delay matters.
        exponent = min(attempt - 1, 1024)
        try:
            base = min(self.max_delay, self.backoff * self.factor**exponent)
        except OverflowError:
            base = self.max_delay
        spread = base * self.jitter
        delay = base + self.rng.uniform(-spread, spread) if spread else base
        return max(0.0, min(self.max_delay, delay))
