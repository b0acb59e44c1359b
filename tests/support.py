"""Helpers shared by several test packages."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, every: float = 0.01,
             what: str = "") -> Any:
    """Poll until `predicate()` is truthy; returns its value (fails the test on timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


def script_calls(connection: Any) -> int:
    """Calls of the qless script Redis ran since its stats were reset: EVALSHA of the
    script and FCALL of its function library."""
    stats = connection.info("commandstats")
    return sum(int(stats[name]["calls"]) for name in ("cmdstat_evalsha", "cmdstat_fcall")
               if name in stats)


def nested(depth: int) -> list[Any]:
    """A list nested `depth` levels deep (job data deeper than any check allows)."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value
