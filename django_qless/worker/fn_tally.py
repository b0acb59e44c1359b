"""Jobs finished by klass, with run and wait times, counted in memory until the next
presence publication adds them to the per-function figures (`core.fn_metrics`).

Like `throughput.Tally`: the job thread counts (two dict increments under a lock, no
Redis), the monitor thread takes the counts every few seconds, spelling them out as the
fields they add to, and gives back what a failed publication could not add.
"""

from __future__ import annotations

import threading
from collections import Counter

from ..core import fn_metrics as fm
from ..core.ms_buckets import bucket_of

#: One kind of ended job: klass, queue, outcome, run-time bucket, wait bucket (-1: unknown).
Ending = tuple[str, str, str, int, int]


class FunctionTally:
    """Counts not yet added to Redis; thread-safe."""

    def __init__(self) -> None:
        self._jobs: Counter[Ending] = Counter()
        #: Milliseconds run, by klass.
        self._ms: Counter[str] = Counter()
        #: Counts a failed publication gave back, already spelled out.
        self._back: Counter[tuple[str, str, int]] = Counter()
        self._lock = threading.Lock()

    def count(self, klass: str, queue: str, outcome: str, duration: float,
              waited: float | None) -> None:
        """One job of `klass` in `queue` ended with `outcome` after running `duration`
        seconds, having waited `waited` seconds to be popped (None: not known); outcomes
        that are not an execution's end are ignored."""
        if outcome not in fm.OUTCOME_KINDS:
            return
        ms = duration * 1000
        ending = (klass, queue, outcome, bucket_of(ms),
                  -1 if waited is None else bucket_of(waited * 1000))
        with self._lock:
            self._jobs[ending] += 1
            self._ms[klass] += round(ms)

    def take(self) -> Counter[tuple[str, str, int]]:
        """Everything counted since the last take, as (kind, name, bucket) -> increment
        (`core.fn_metrics.add_functions`), leaving nothing behind."""
        with self._lock:
            jobs, ms, counts = self._jobs, self._ms, self._back
            self._jobs, self._ms, self._back = Counter(), Counter(), Counter()
        for (klass, queue, outcome, run, wait), n in jobs.items():
            counts[fm.EXECUTIONS, klass, -1] += n
            counts[fm.OUTCOME_KINDS[outcome], klass, -1] += n
            counts[fm.KLASS_RUN, klass, run] += n
            counts[fm.QUEUE_RUN, queue, run] += n
            counts[fm.ALL_RUN, "", run] += n
            if wait >= 0:
                counts[fm.KLASS_WAIT, klass, wait] += n
                counts[fm.QUEUE_WAIT, queue, wait] += n
                counts[fm.ALL_WAIT, "", wait] += n
        for klass, total in ms.items():
            counts[fm.RUN_MS, klass, -1] += total
        return counts

    def give_back(self, taken: Counter[tuple[str, str, int]]) -> None:
        """Counts that could not be added: they go with the next take."""
        with self._lock:
            self._back.update(taken)
