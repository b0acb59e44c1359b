"""Helpers shared by several test packages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

T0 = 1_700_000_000.0


class FakeClock:
    """A clock the test moves by hand: `clock()` returns `now`."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move forward and return the new time."""
        self.now += seconds
        return self.now


@contextmanager
def registry_restored() -> Iterator[None]:
    """Undo the job registrations made inside the block (and restore replaced entries)."""
    from django_qless.registry import registry  # noqa: PLC0415 - needs Django set up

    before = {defn.name: defn for defn in registry.all()}
    try:
        yield
    finally:
        for defn in registry.all():
            if defn.name not in before:
                registry.unregister(defn.name)
        for name, defn in before.items():
            registry.unregister(name)
            registry.register(defn)
