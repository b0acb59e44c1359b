"""End-to-end worker benchmark: django_qless's `qless_worker` beside RQ, huey, Celery, dramatiq.

Run: python bench/worker_e2e.py [--jobs N] [--only qless,huey,...] [--rounds R]

One private redis-server serves every system (one database each, flushed before each
scenario). Per system: (1) drain: N no-op jobs are put first, then the worker is started and
timed until every job ran; (2) put-while-draining: a producer process puts N jobs one call
at a time into an idle, running worker; (3) pickup latency: latency jobs put one at a time,
SPACING apart, each recording `start - put`. The competitors run from their own virtualenv
(created on first use from bench/requirements-competitors.txt); they are never dependencies
of the project. Exit status 1 when django_qless misses a target.
"""

from __future__ import annotations

import sys

from e2e.report import (
    Summary,
    best_ratios,
    ratios,
    verdict,
)
from e2e.session import Plan, options, run
from e2e.systems import (
    COMPETITOR_PACKAGES,
    OUR_PACKAGES,
    SYSTEMS,
    ensure_venv,
    venv_bin,
)


def main() -> int:
    """Run the benchmark and print the table, the ratios and the verdict."""
    args = options(__doc__, SYSTEMS, jobs=20_000)
    sides: list[tuple[str, str, tuple[str, ...]]] = [("ours", sys.executable, OUR_PACKAGES)]
    if any(name != "qless" for name in args.systems):
        ensure_venv()
        sides.append(("competitors", venv_bin("python"), COMPETITOR_PACKAGES))
    def compared(rows: list[Summary]) -> str:
        return "\n".join(part for part in (ratios(rows), best_ratios(rows)) if part)

    return run(Plan(SYSTEMS, tuple(sides), ratios=compared, verdict=verdict), args)


if __name__ == "__main__":
    sys.exit(main())
