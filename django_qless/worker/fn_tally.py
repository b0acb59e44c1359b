"""Jobs finished by klass, with run and wait times, counted in memory until the next
presence publication adds them to the per-function figures (`core.fn_metrics`).

Like `throughput.Tally`: the job thread counts (dict increments under a lock, no Redis),
the monitor thread takes the counts every few seconds, and gives back what a failed
publication could not add.
"""

from __future__ import annotations

import threading
from collections import Counter

from ..core import fn_metrics as fm
from ..core.ms_buckets import bucket_of


class FunctionTally:
    """Counts not yet added to Redis: (kind, name, bucket) -> increment; thread-safe."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, int]] = Counter()
        self._lock = threading.Lock()

    def count(self, klass: str, queue: str, outcome: str, duration: float,
              waited: float | None) -> None:
        """One job of `klass` in `queue` ended with `outcome` after running `duration`
        seconds, having waited `waited` seconds to be popped (None: not known); outcomes
        that are not an execution's end are ignored."""
        kind = fm.OUTCOME_KINDS.get(outcome)
        if kind is None:
            return
        run = bucket_of(duration * 1000)
        wait = -1 if waited is None else bucket_of(waited * 1000)
        with self._lock:
            counts = self._counts
            counts[fm.EXECUTIONS, klass, -1] += 1
            counts[kind, klass, -1] += 1
            counts[fm.RUN_MS, klass, -1] += round(duration * 1000)
            counts[fm.KLASS_RUN, klass, run] += 1
            counts[fm.QUEUE_RUN, queue, run] += 1
            counts[fm.ALL_RUN, "", run] += 1
            if wait >= 0:
                counts[fm.KLASS_WAIT, klass, wait] += 1
                counts[fm.QUEUE_WAIT, queue, wait] += 1
                counts[fm.ALL_WAIT, "", wait] += 1

    def take(self) -> Counter[tuple[str, str, int]]:
        """Everything counted since the last take, leaving nothing behind."""
        with self._lock:
            taken, self._counts = self._counts, Counter()
        return taken

    def give_back(self, taken: Counter[tuple[str, str, int]]) -> None:
        """Counts that could not be added: they go with the next take."""
        with self._lock:
            self._counts.update(taken)
