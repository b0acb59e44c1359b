"""The I/O benchmark's configurations: each queue in its I/O set-up, at 2 x 16 and 1 x 200.

Every configuration runs the jobs of bench/e2e/apps/jobbody.py that wait IO_SECONDS, so
one slot drains at most 1 / IO_SECONDS jobs/s and a configuration's ideal is its slots
divided by that. django_qless gets `--concurrency` only where the installed worker has it;
otherwise it runs processes only, and its labels say so.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from functools import partial

from .report import Summary, best_ratios, number, ratio_of, same_concurrency, times
from .session import Checks
from .systems import (
    ROOT,
    System,
    WorkerArgv,
    celery,
    dramatiq_threads,
    huey,
    qless_worker,
    rq_pool,
    venv_bin,
)

#: Seconds every I/O job waits (jobbody.IO_SECONDS: the workers import that one).
IO_SECONDS = 0.05
#: The job kinds, in the order the report takes them.
KINDS = ("sleep", "async", "http")
KIND_TITLES = {
    "sleep": f"sync jobs: time.sleep({IO_SECONDS:g})",
    "async": f"async jobs: await asyncio.sleep({IO_SECONDS:g})",
    "http": f"HTTP GET to a local server answering after {IO_SECONDS * 1000:g} ms",
}
#: The issue's targets for a quiet machine: share of the ideal and ratios, jobs/s.
MIN_SYNC_IDEAL = 0.85
MIN_SYNC_VS_DRAMATIQ = 1.0
MIN_ASYNC_RATE = 2000.0
MIN_ASYNC_VS_GREENLETS = 1.2


@dataclass(frozen=True)
class Shape:
    """One configuration: worker processes, jobs each runs at once, and its argv builder."""

    name: str
    label: str
    processes: int
    per_process: int
    worker: WorkerArgv
    peer: str
    burst: bool = False

    @property
    def slots(self) -> int:
        """Jobs the configuration runs at once in all its processes."""
        return self.processes * self.per_process


#: django_qless's environment (settings, paths) for asking its worker what it supports.
QLESS_PROBE = System("qless", "", 0, sys.executable, qless_worker)


def supports_concurrency(python: str = sys.executable) -> bool:
    """Whether the installed `qless_worker` takes `--concurrency` (its --help lists it)."""
    env = QLESS_PROBE.env("redis://127.0.0.1:1/0")
    result = subprocess.run([python, "-m", "django", "qless_worker", "--help"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120, check=True)
    return "--concurrency" in result.stdout


def qless_shapes(concurrency: bool) -> list[Shape]:
    """django_qless with `--concurrency`, or with processes only when the worker lacks it."""
    if concurrency:
        return [
            Shape("qless", "django_qless (2 processes x 16)", 2, 16,
                  partial(qless_worker, processes=2, concurrency=16), "qless", burst=True),
            Shape("qless_1x200", "django_qless (1 process x 200)", 1, 200,
                  partial(qless_worker, processes=1, concurrency=200), "qless", burst=True),
            Shape("qless_2x100", "django_qless (2 processes x 100)", 2, 100,
                  partial(qless_worker, processes=2, concurrency=100), "qless", burst=True),
        ]
    return [
        Shape("qless", "django_qless (2 processes x 1, no --concurrency yet)", 2, 1,
              partial(qless_worker, processes=2), "qless", burst=True),
        # As many serial processes as 2 x 16 has slots: 32 Django processes fit in memory.
        Shape("qless_32x1", "django_qless (32 processes x 1, no --concurrency yet)", 32, 1,
              partial(qless_worker, processes=32), "qless", burst=True),
    ]


PEER_SHAPES = [
    Shape("dramatiq_2x16", "dramatiq (2 processes x 16 threads)", 2, 16,
          partial(dramatiq_threads, processes=2, threads=16), "dramatiq"),
    Shape("dramatiq_1x200", "dramatiq (1 process x 200 threads)", 1, 200,
          partial(dramatiq_threads, processes=1, threads=200), "dramatiq"),
    Shape("dramatiq_2x100", "dramatiq (2 processes x 100 threads)", 2, 100,
          partial(dramatiq_threads, processes=2, threads=100), "dramatiq"),
    # huey and Celery run one process; their equal of 2 x 16 is 32 threads or greenlets.
    Shape("huey_thread_32", "huey -k thread (1 process x 32)", 1, 32,
          partial(huey, workers=32, kind="thread"), "huey"),
    Shape("huey_thread_200", "huey -k thread (1 process x 200)", 1, 200,
          partial(huey, workers=200, kind="thread"), "huey"),
    Shape("huey_greenlet_32", "huey -k greenlet (1 process x 32)", 1, 32,
          partial(huey, workers=32, kind="greenlet"), "huey"),
    Shape("huey_greenlet_200", "huey -k greenlet (1 process x 200)", 1, 200,
          partial(huey, workers=200, kind="greenlet"), "huey"),
    Shape("celery_threads_32", "Celery -P threads (1 process x 32)", 1, 32,
          partial(celery, pool="threads", concurrency=32), "celery"),
    Shape("celery_threads_200", "Celery -P threads (1 process x 200)", 1, 200,
          partial(celery, pool="threads", concurrency=200), "celery"),
    Shape("celery_gevent_32", "Celery -P gevent (1 process x 32)", 1, 32,
          partial(celery, pool="gevent", concurrency=32), "celery"),
    Shape("celery_gevent_200", "Celery -P gevent (1 process x 200)", 1, 200,
          partial(celery, pool="gevent", concurrency=200), "celery"),
    # Processes only (each forks a work horse per job): 200 of them is not a configuration
    # anyone runs, so RQ runs at 32 alone.
    Shape("rq_pool_32", "RQ worker-pool (32 processes)", 32, 1,
          partial(rq_pool, processes=32), "rq", burst=True),
]


def io_systems(concurrency: bool) -> dict[str, System]:
    """Every configuration as a System, each on its own Redis database (1 to 15)."""
    shapes = [*qless_shapes(concurrency), *PEER_SHAPES]
    systems: dict[str, System] = {}
    for db, shape in enumerate(shapes, start=1):
        ours = shape.peer == "qless"
        systems[shape.name] = System(
            shape.name, shape.label, db, sys.executable if ours else venv_bin("python"),
            shape.worker, has_burst=shape.burst, driver=f"sys_{shape.peer}",
            peer="" if shape.name == shape.peer else shape.peer, concurrency=shape.slots,
            ideal_rate=shape.slots / IO_SECONDS)
    return systems


def compared(rows: list[Summary]) -> str:
    """django_qless against each peer at the same concurrency, then against each one's best."""
    parts = (same_concurrency(rows), best_ratios(rows, figures=(("jobs/s", "drain_rate"),)))
    return "\n".join(part for part in parts if part)


def _row(rows: list[Summary], name: str) -> Summary | None:
    return next((row for row in rows if row.system == name), None)


def _unmeasured(texts: tuple[str, ...]) -> Checks:
    """The targets of a shape django_qless cannot run yet, neither PASS nor FAIL."""
    return [(f"{text} (n/a: needs qless_worker --concurrency)", None) for text in texts]


def sync_checks(rows: list[Summary], concurrency: bool = True) -> Checks:
    """Sync 50 ms jobs at 2 x 16: >= 85% of the ideal and >= 1.0x dramatiq 2 x 16."""
    texts = (f"2 x 16 reaches {MIN_SYNC_IDEAL:.0%} of the ideal",
             f"2 x 16 >= {MIN_SYNC_VS_DRAMATIQ:.1f}x dramatiq 2 x 16")
    ours, dramatiq = _row(rows, "qless"), _row(rows, "dramatiq_2x16")
    if ours is None:
        return []
    if not concurrency:
        return _unmeasured(texts)
    share = ours.ideal_fraction
    ratio = ratio_of(ours.drain_rate, dramatiq.drain_rate if dramatiq else None)
    return [(f"{texts[0]} ({percent(share)})", None if share is None else share >= MIN_SYNC_IDEAL),
            (f"{texts[1]} ({times(ratio)})",
             None if ratio is None else ratio >= MIN_SYNC_VS_DRAMATIQ)]


def async_checks(rows: list[Summary], concurrency: bool = True) -> Checks:
    """Async 50 ms jobs at 1 x 200: >= 2,000 jobs/s and >= 1.2x the best greenlet pool."""
    texts = (f"1 x 200 >= {MIN_ASYNC_RATE:,.0f} jobs/s",
             f"1 x 200 >= {MIN_ASYNC_VS_GREENLETS:.1f}x the best greenlet pool")
    if not concurrency:
        return _unmeasured(texts) if any(row.peer == "qless" for row in rows) else []
    ours = _row(rows, "qless_1x200")
    if ours is None:
        return []
    rate = ours.drain_rate
    pools = [row for row in rows if row.system.startswith(("huey_greenlet", "celery_gevent"))
             and row.drain_rate is not None]
    best = max(pools, key=lambda row: row.drain_rate or 0.0, default=None)
    ratio = ratio_of(rate, best.drain_rate if best else None)
    against = (f"{best.label}, worker RSS {number(best.rss_mb)} MB against "
               f"{number(ours.rss_mb)} MB" if best else "no greenlet pool ran")
    return [(f"{texts[0]} ({number(rate)}/s)", None if rate is None else rate >= MIN_ASYNC_RATE),
            (f"{texts[1]} ({times(ratio)}: {against})",
             None if ratio is None else ratio >= MIN_ASYNC_VS_GREENLETS)]


def no_checks(rows: list[Summary], concurrency: bool = True) -> Checks:
    """The HTTP jobs have no target of their own."""
    return []


#: The targets of each job kind.
CHECKS = {"sleep": sync_checks, "async": async_checks, "http": no_checks}


def percent(fraction: float | None) -> str:
    """A share as a whole percentage, "-" when not measured."""
    return "-" if fraction is None else f"{fraction:.0%}"
