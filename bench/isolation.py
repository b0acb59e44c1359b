"""What `--isolation process` costs: no-op jobs drained by the real worker, in-process vs forked.

Run: python bench/isolation.py [--jobs 2000] [--rounds 3]

One private redis-server. Per round and mode, N `worker.noop` jobs (tests/workerapp) are put,
then `manage.py qless_worker q --burst` (plus `--isolation process` for the isolated mode)
drains them in a subprocess; the same command on empty queues is timed too, and its start-up
wall and CPU time are subtracted. CPU is the worker's user + system time as
`getrusage(RUSAGE_CHILDREN)` sees it, which includes the job processes it forked and
reaped. The modes take turns; each figure is the median over the rounds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/isolation.py` puts bench/, not the root, first
    sys.path.insert(0, str(ROOT))

from django_qless.core import Client  # noqa: E402
from tests.redis_harness import RedisServer  # noqa: E402

MODES = {"in-process": (), "process": ("--isolation", "process")}


def drain(url: str, extra: tuple[str, ...]) -> tuple[float, float]:
    """Run one burst worker to the end; (wall seconds, CPU seconds) it took."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.workerapp.settings",
           "QLESS_TEST_URL": url, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "django", "qless_worker", "q", "--burst",
                    "--prefetch", "0", "--verbosity", "0", *extra],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def put_noops(client: Client, count: int) -> None:
    """Put `count` no-op jobs, one call each."""
    queue = client.queue("q")
    for _ in range(count):
        queue.put("worker.noop", {"args": [], "kwargs": {}})


def main() -> int:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = RedisServer().start()
    try:
        client = Client(redis.Redis.from_url(server.url))
        rates: dict[str, list[float]] = {mode: [] for mode in MODES}
        cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(args.rounds):
            for mode, extra in MODES.items():
                client.redis.flushdb()
                idle_wall, idle_cpu = drain(server.url, extra)
                put_noops(client, args.jobs)
                wall, cpu = drain(server.url, extra)
                left = client.queue("q").counts().waiting
                if left:
                    raise SystemExit(f"{mode}: {left} jobs not drained")
                rates[mode].append(args.jobs / max(wall - idle_wall, 1e-9))
                cpus[mode].append((cpu - idle_cpu) / args.jobs * 1e6)
    finally:
        server.stop()
    load = os.getloadavg()[0]
    print(f"{args.jobs} no-op jobs x {args.rounds} rounds, load average {load:.1f}")
    print(f"{'mode':<12} {'jobs/s':>8} {'worker CPU us/job':>18}")
    for mode in MODES:
        print(f"{mode:<12} {statistics.median(rates[mode]):>8,.0f} "
              f"{statistics.median(cpus[mode]):>18,.0f}")
    ratio = statistics.median(rates["in-process"]) / statistics.median(rates["process"])
    print(f"process isolation: {ratio:.1f}x slower per no-op job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
