"""Per-function figures for Prometheus: a bounded set of klass labels, and run-time buckets.

Read from the lifetime totals (`core.fn_metrics.read_totals`, one HGETALL), which only go
up, so they are exported as counters. Label values are bounded: every registered job
function keeps its own, other clients' klasses only the `OTHERS_SHOWN` busiest; the rest
are added up under `OTHER`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import accumulate

from ..core import ms_buckets
from ..core.fn_metrics import Figures

#: Klasses not registered here that keep a label of their own, the busiest.
OTHERS_SHOWN = 20
#: The label the other klasses share.
OTHER = "(other)"
#: Histogram bounds (seconds): bucket bounds of `ms_buckets`, so the counts are exact.
BOUNDS_MS = (1, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 100_000,
             300_000, 1_000_000, 3_000_000)


def bounded(functions: Mapping[str, Figures], registered: Callable[[str], bool]
            ) -> dict[str, Figures]:
    """The klasses to label: registered ones, the busiest others, and `OTHER` for the rest."""
    kept = {klass: figures for klass, figures in functions.items() if registered(klass)}
    others = sorted((f for klass, f in functions.items() if klass not in kept),
                    key=lambda f: (-f.executions, f.klass))
    for figures in others[:OTHERS_SHOWN]:
        kept[figures.klass] = figures
    if len(others) > OTHERS_SHOWN:
        rest = kept.setdefault(OTHER, Figures(OTHER))
        for figures in others[OTHERS_SHOWN:]:
            rest.add(figures)
    return kept


def run_buckets(figures: Figures) -> list[tuple[str, float]]:
    """Cumulative Prometheus buckets (`le` in seconds, count) of a klass' run times."""
    cumulative = list(accumulate(figures.run))
    pairs: list[tuple[str, float]] = [
        (str(bound / 1000), cumulative[ms_buckets.bucket_of(bound)]) for bound in BOUNDS_MS]
    pairs.append(("+Inf", cumulative[-1]))
    return pairs
