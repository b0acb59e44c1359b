"""Jobs finished by queue and outcome, counted in memory until the next presence publication.

The job thread counts (`count`: a dict increment under a lock, no Redis); the monitor
thread takes what was counted every few seconds and adds it to the current minute's
throughput in the round trip that publishes the worker's presence (`presence`). Counts a
failed publication could not add are given back for the next one, so only a crash loses
them: at most one publication interval's worth.
"""

from __future__ import annotations

import threading
from collections import Counter

from ..core.live import OUTCOMES, RUN_MS


class Tally:
    """Outcomes not yet added to Redis: (queue, outcome) -> jobs, and (queue, `RUN_MS`) ->
    milliseconds those jobs ran; thread-safe."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def count(self, queue: str, outcome: str, duration: float = 0.0) -> None:
        """One job of `queue` ended with `outcome` after running `duration` seconds
        (outcomes the overview does not show are ignored)."""
        if outcome in OUTCOMES:
            with self._lock:
                self._counts[queue, outcome] += 1
                self._counts[queue, RUN_MS] += round(duration * 1000)

    def take(self) -> Counter[tuple[str, str]]:
        """Everything counted since the last take, leaving nothing behind."""
        with self._lock:
            taken, self._counts = self._counts, Counter()
        return taken

    def give_back(self, taken: Counter[tuple[str, str]]) -> None:
        """Counts that could not be added: they go with the next take."""
        with self._lock:
            self._counts.update(taken)
