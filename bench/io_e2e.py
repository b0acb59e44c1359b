"""I/O-bound jobs end to end: django_qless beside dramatiq, huey, Celery and RQ set up for I/O.

Run: python bench/io_e2e.py [--jobs N] [--kinds sleep,async,http] [--only qless,dramatiq_2x16,...]

Three kinds of job, each waiting 50 ms: time.sleep, await asyncio.sleep, and an HTTP GET to
a local server (started by the bench) that answers after 50 ms. Each configuration (2 x 16
and 1 x 200 jobs at once, and each queue's best) drains N pre-filled jobs of each kind, then
a fresh worker takes spaced jobs for the pickup latency. One private redis-server serves
every configuration (one database each). django_qless gets `--concurrency` only when the
installed `qless_worker` has it; otherwise it runs processes only, labelled so. Exit status
1 when django_qless misses a target of the issue.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

from e2e.io_systems import (
    CHECKS,
    IO_SECONDS,
    KIND_TITLES,
    KINDS,
    compared,
    io_systems,
    percent,
    supports_concurrency,
)
from e2e.report import DRAIN, DRAIN_START, P50, P99, REDIS_CPU, WORKER_CPU, Column, number
from e2e.session import Plan, options, run_sections
from e2e.slow_http import SlowServer
from e2e.systems import COMPETITOR_PACKAGES, OUR_PACKAGES, ensure_venv, venv_bin

COLUMNS: tuple[Column, ...] = (
    ("slots", lambda row: str(row.concurrency)),
    DRAIN,
    ("of ideal", lambda row: percent(row.ideal_fraction)),
    DRAIN_START,
    ("RSS MB", lambda row: number(row.rss_mb)),
    WORKER_CPU,
    REDIS_CPU,
    ("pickup " + P50[0], P50[1]),
    P99,
)


def kinds(parser: argparse.ArgumentParser) -> None:
    """The option that picks the job kinds."""
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"comma-separated job kinds among {', '.join(KINDS)}")


def main() -> int:
    """Run every kind through the chosen configurations; print a table per kind."""
    concurrency = supports_concurrency()
    systems = io_systems(concurrency)
    args = options(__doc__, systems, jobs=1_000, more=kinds)
    chosen = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    if unknown := sorted(set(chosen) - set(KINDS)):
        sys.exit(f"unknown job kinds: {', '.join(unknown)}")
    sides: list[tuple[str, str, tuple[str, ...]]] = [("ours", sys.executable, OUR_PACKAGES)]
    if any(systems[name].python != sys.executable for name in args.systems):
        ensure_venv()
        sides.append(("competitors", venv_bin("python"), (*COMPETITOR_PACKAGES, "gevent")))
    print(f"qless_worker --concurrency: {'yes' if concurrency else 'not available'}; "
          f"ideal = slots / {IO_SECONDS:g} s", file=sys.stderr)
    with SlowServer(IO_SECONDS) as server:
        sections = [
            (KIND_TITLES[kind], Plan(systems, tuple(sides), scenarios=("drain", "pickup"),
                                     columns=COLUMNS, ratios=compared,
                                     verdict=partial(CHECKS[kind], concurrency=concurrency),
                                     env=(("BENCH_IO_KIND", kind),
                                          ("BENCH_HTTP_URL", server.url))))
            for kind in chosen
        ]
        return run_sections(sections, args)


if __name__ == "__main__":
    sys.exit(main())
