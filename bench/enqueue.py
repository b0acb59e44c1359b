"""Enqueue cost: `.enqueue()` one call at a time, and `.enqueue_many()` in batches.

Run: python bench/enqueue.py [--jobs N] [--rounds R] [--batch B] [--redis-server PATH]
     [--json PATH]

A private redis-server and a `@qless_job` with one integer argument, outside any
transaction (no database: the put goes straight to Redis). Per mode and round: puts/s
(wall clock), the client's CPU per put (`time.process_time`, this process) and Redis' CPU
per put (`INFO cpu`, the main thread's user + system time, network and parsing included),
beside the script's usec per call (`cmdstat_fcall` on Redis 7, else `cmdstat_evalsha`).
CPU figures move much less than wall time with the machine's load; each figure is the
median of the rounds. The database is flushed between rounds so every round puts into
empty queues. The last lines give the rate the
CPU figures allow when the client and Redis each have a core: a single call runs them in
turn (1 / (client + Redis)), pipelined batches overlap them (1 / max(client, Redis)).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/enqueue.py` puts bench/, not the root, on the path
    sys.path.insert(0, str(ROOT))

from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402

QUEUE = "bench"


def redis_cpu(client: redis.Redis) -> float:
    """Seconds of CPU the server's main thread has used (all threads on Redis < 7)."""
    info = client.info("cpu")
    if "used_cpu_user_main_thread" in info:
        return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def measure(client: redis.Redis, jobs: int, run: Callable[[], None]) -> dict[str, float]:
    """Run one block of `jobs` puts; its figures per put."""
    client.flushall()
    client.config_resetstat()
    server0 = redis_cpu(client)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    run()
    cpu1, wall1 = time.process_time(), time.perf_counter()
    server1 = redis_cpu(client)
    every = client.info("commandstats")
    # The puts go as FCALL of the function library on Redis 7, as EVALSHA otherwise.
    stats = every.get("cmdstat_fcall") or every.get("cmdstat_evalsha", {})
    queued = client.zcard(f"ql:q:{QUEUE}-work")
    if queued != jobs:
        raise SystemExit(f"expected {jobs} waiting jobs, found {queued}")
    return {
        "puts/s": jobs / (wall1 - wall0),
        "client CPU us/put": (cpu1 - cpu0) / jobs * 1e6,
        "Redis CPU us/put": (server1 - server0) / jobs * 1e6,
        "script us/call": float(stats.get("usec_per_call", 0.0)),
    }


def main() -> None:
    """Parse arguments, start Redis, run both modes and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="items per enqueue_many call")
    parser.add_argument("--redis-server", default=None)
    parser.add_argument("--json", default=None, help="also write the medians to this file")
    options = parser.parse_args()

    with django_on_private_redis(options.redis_server) as server:
        from bench_enqueue_job import record  # noqa: PLC0415 - needs the app registry

        run_modes(server.client(), record, options)


def print_medians(client: redis.Redis, run: str, first: str, width: int,
                  samples: dict[str, list[dict[str, float]]]) -> None:
    """A header naming the run, Redis and the load, then one line of medians per name."""
    load = os.getloadavg()
    print(f"{run}, Redis {client.info()['redis_version']}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    figures = list(next(iter(samples.values()))[0])
    print(f"{first:{width}s}" + "".join(f"{figure:>20s}" for figure in figures))
    for name, rounds in samples.items():
        medians = [statistics.median(r[figure] for r in rounds) for figure in figures]
        print(f"{name:{width}s}" + "".join(f"{value:20,.1f}" for value in medians))


@contextmanager
def django_on_private_redis(binary: str | None) -> Iterator[RedisServer]:
    """A private redis-server, and Django set up with the bench app's settings on it."""
    server = RedisServer(binary or find_redis_server()).start()
    try:
        os.environ["BENCH_REDIS_URL"] = server.url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qless_bench.settings")
        sys.path.insert(0, str(ROOT / "bench" / "e2e" / "apps"))
        import django  # noqa: PLC0415 - after the settings module is chosen

        django.setup()
        yield server
    finally:
        server.stop()


def run_modes(client: redis.Redis, record: object, options: argparse.Namespace) -> None:
    """Warm up, then time single calls and batches in turns; print the medians."""
    jobs, batch = options.jobs, options.batch
    enqueue = record.enqueue  # type: ignore[attr-defined]
    many = getattr(record, "enqueue_many", None)

    from bench_integrations import request_span  # noqa: PLC0415 - beside the bench's app

    # With $BENCH_INTEGRATION set (bench/integrations.py) the puts run inside a span, as in
    # a web request; without it, in nothing.
    def single() -> None:
        with request_span():
            for i in range(jobs):
                enqueue(i)

    def bulk() -> None:
        assert many is not None
        with request_span():
            for start in range(0, jobs, batch):
                many([((i,), {}) for i in range(start, min(start + batch, jobs))])

    modes: dict[str, Callable[[], None]] = {"single .enqueue()": single}
    if many is not None:
        modes[f"enqueue_many (batches of {batch})"] = bulk
    for run in modes.values():  # warm-up: connections, script load, caches
        measure(client, jobs, run)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in modes}
    for _ in range(options.rounds):
        for name, run in modes.items():
            samples[name].append(measure(client, jobs, run))
    print_medians(client, f"{jobs:,} jobs x {options.rounds} rounds", "mode", 36, samples)
    if options.json:
        medians = {name: {figure: statistics.median(r[figure] for r in rounds)
                          for figure in rounds[0]} for name, rounds in samples.items()}
        Path(options.json).write_text(json.dumps(medians, indent=2), encoding="utf-8")
    for name, rounds in samples.items():
        client = statistics.median(r["client CPU us/put"] for r in rounds)
        server = statistics.median(r["Redis CPU us/put"] for r in rounds)
        # One round trip per put runs client and server in turn; pipelined batches overlap
        # them, so the busier side alone bounds the rate.
        bound = 1e6 / (client + server) if name.startswith("single") else 1e6 / max(client,
                                                                                      server)
        print(f"{name}: CPU-bound rate {bound:,.0f} puts/s with a free core for each side")


if __name__ == "__main__":
    main()
