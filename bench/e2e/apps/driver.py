"""Put jobs into one system with its ordinary enqueue call; run as a subprocess by the bench.

    python driver.py MODULE put N                 # N no-op jobs, one call each
    python driver.py MODULE latency N SPACING     # N latency jobs, SPACING seconds apart

MODULE names a module beside this file (`sys_<system>`) with `put_noop()` and
`put_latency(put_at)`; with $BENCH_IO_KIND set (bench/io_e2e.py), both put that kind of I/O
job through the module's `put_io(kind, put_at)` instead (put_at 0: no pickup sample).
Prints one JSON line: {"jobs": N, "started": epoch seconds of the first put, "seconds":
elapsed, "cpu": CPU seconds of the puts}, so the bench can leave the interpreter's start-up
out.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import time
from collections.abc import Callable
from typing import Any, cast


def load(module: str) -> Any:
    """The system's module (imports its queue library, and Django where it needs it)."""
    return importlib.import_module(module)


def putters(module: Any) -> tuple[Callable[[], None], Callable[[float], None]]:
    """The module's put_noop and put_latency, or its I/O job of $BENCH_IO_KIND for both."""
    kind = os.environ.get("BENCH_IO_KIND")
    if not kind:
        return (cast(Callable[[], None], module.put_noop),
                cast(Callable[[float], None], module.put_latency))
    put_io = cast(Callable[[str, float], None], module.put_io)
    return (lambda: put_io(kind, 0.0)), (lambda put_at: put_io(kind, put_at))


def put(module: Any, count: int) -> tuple[float, float]:
    """Enqueue `count` no-op jobs back to back; returns the seconds and CPU seconds taken."""
    put_noop = putters(module)[0]
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        put_noop()
    return time.perf_counter() - started, time.process_time() - cpu


def latency(module: Any, count: int, spacing: float) -> float:
    """Enqueue `count` latency jobs, each stamped with its put time, `spacing` apart."""
    put_latency = putters(module)[1]
    started = time.perf_counter()
    for _ in range(count):
        put_latency(time.time())
        time.sleep(spacing)
    return time.perf_counter() - started


def main() -> None:
    """Parse the command line and put the jobs."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("module")
    parser.add_argument("action", choices=("put", "latency"))
    parser.add_argument("count", type=int)
    parser.add_argument("spacing", type=float, nargs="?", default=0.02)
    args = parser.parse_args()
    module = load(args.module)
    started = time.time()
    cpu = 0.0
    if args.action == "put":
        elapsed, cpu = put(module, args.count)
    else:
        elapsed = latency(module, args.count, args.spacing)
    print(json.dumps({"jobs": args.count, "started": started, "seconds": elapsed, "cpu": cpu}),
          flush=True)


if __name__ == "__main__":
    main()
