"""Drain rate at scale: deep queues, many queues, 1/2/4 processes and a 10 KB payload.

Run: python bench/scale.py [--rounds 3] [--window 20000] [--only KEY,...] [--redis-server PATH]

One private redis-server. Per scenario and round: the database is flushed, the jobs are
put straight through the script (pipelined `put` calls with the data `@qless_job` would
write, so filling a million takes about a minute, not the eight an `.enqueue()` loop
would), then `manage.py qless_worker --burst` starts on the scenario's queues. The rate is
taken over a window of jobs after a warm-up (polling the job body's counter), so a
1,000,000-job queue is not drained to the end: what is compared is how fast jobs leave a
queue that deep. Rates are medians over the rounds; the last column divides each by the
1,000-queued scenario's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import redis

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for path in (BENCH, ROOT):  # e2e/ beside this file; tests/ (the Redis harness) at the root
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from e2e.measure import COUNT, stop  # noqa: E402
from e2e.session import machine  # noqa: E402
from e2e.systems import SYSTEMS  # noqa: E402

from tests.conftest import SCRIPT_PATH  # noqa: E402
from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402

BLOCK = 5_000
POLL = 0.01
#: Klasses of the bench app (bench/e2e/apps/qless_bench/qless_jobs.py).
NOOP, PAYLOAD = "bench.noop", "bench.payload"


@dataclass(frozen=True)
class Scenario:
    """How many jobs wait, over how many queues, for how many worker processes."""

    key: str
    name: str
    queued: int
    queues: int = 1
    processes: int = 2
    payload_bytes: int = 0

    def queue_names(self) -> list[str]:
        """The queues the jobs are spread over (round robin)."""
        return ["bench"] if self.queues == 1 else [f"bench-{n:03d}" for n in range(self.queues)]


SCENARIOS = (
    Scenario("1k", "1,000 queued", 1_000),
    Scenario("20k", "20,000 queued", 20_000),
    Scenario("1m", "1,000,000 queued", 1_000_000),
    Scenario("queues100", "100 queues", 20_000, queues=100),
    Scenario("p1", "1 process", 20_000, processes=1),
    Scenario("p4", "4 processes", 20_000, processes=4),
    Scenario("payload10k", "10 KB payload", 20_000, payload_bytes=10_240),
)


def fill(client: redis.Redis, sha: str, scenario: Scenario) -> float:
    """Put the scenario's jobs through the script; returns the seconds it took."""
    names = scenario.queue_names()
    if scenario.payload_bytes:
        klass, data = PAYLOAD, json.dumps({"args": ["x" * scenario.payload_bytes], "kwargs": {}})
    else:
        klass, data = NOOP, json.dumps({"args": [], "kwargs": {}})
    started = time.perf_counter()
    now = time.time()
    for start in range(0, scenario.queued, BLOCK):
        pipe = client.pipeline(transaction=False)
        for n in range(start, min(start + BLOCK, scenario.queued)):
            pipe.evalsha(sha, 0, "put", now, "bench", names[n % len(names)], f"j{n:07d}",
                         klass, data, 0)
        pipe.execute()
    return time.perf_counter() - started


def drain_rate(client: redis.Redis, url: str, scenario: Scenario, window: int,
               logs: Path) -> float:
    """Jobs/s over a window of jobs after a warm-up, the worker started on a full queue."""
    warm = min(scenario.queued // 10, 2_000)
    counted = min(window, scenario.queued - warm)
    env = SYSTEMS["qless"].env(url)
    argv = [sys.executable, "-m", "django", "qless_worker", *scenario.queue_names(),
            "--processes", str(scenario.processes), "--burst", "--verbosity", "0"]
    with (logs / "worker.log").open("a", encoding="utf-8") as log:
        worker = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  text=True, start_new_session=True)
    try:
        started = crossing(client, warm, worker)
        ended = crossing(client, warm + counted, worker)
    finally:
        stop(worker)
    return counted / (ended - started)


def crossing(client: redis.Redis, target: int, worker: subprocess.Popen[str]) -> float:
    """The time the job counter first reached `target` (polled)."""
    deadline = time.monotonic() + 600
    while int(client.get(COUNT) or 0) < target:
        if worker.poll() is not None and int(client.get(COUNT) or 0) < target:
            raise SystemExit(f"worker exited ({worker.returncode}) before {target} jobs ran")
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {target} jobs ran in 600 s")
        time.sleep(POLL)
    return time.time()


def main() -> int:
    """Run every scenario for the rounds asked and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=20_000,
                        help="jobs timed per run, after the warm-up")
    parser.add_argument("--only", default="", help="comma-separated scenario keys among "
                        + ", ".join(s.key for s in SCENARIOS))
    parser.add_argument("--redis-server", default=None)
    options = parser.parse_args()
    chosen = [s for s in SCENARIOS
              if not options.only or s.key in {n.strip() for n in options.only.split(",")}]
    server = RedisServer(binary=options.redis_server or find_redis_server()).start()
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / f"qless-scale-{os.getpid()}"
    logs.mkdir(parents=True, exist_ok=True)
    try:
        client = server.client()
        sha = client.script_load(SCRIPT_PATH.read_text(encoding="utf-8"))
        url = server.url
        print(machine())
        print(f"load average at the start: {os.getloadavg()[0]:.2f}; rounds {options.rounds}; "
              f"window {options.window:,} jobs; logs in {logs}")
        rates: dict[str, float] = {}
        for scenario in chosen:
            runs = []
            for _ in range(options.rounds):
                client.flushdb()
                filled = fill(client, sha, scenario)
                runs.append(drain_rate(client, url, scenario, options.window, logs))
            rates[scenario.name] = statistics.median(runs)
            print(f"  {scenario.name}: filled in {filled:.1f} s; "
                  f"runs {', '.join(f'{r:,.0f}' for r in runs)} jobs/s", flush=True)
    finally:
        server.stop()
    base = rates.get(SCENARIOS[0].name)
    print(f"\n{'scenario':<18} {'queued':>10} {'queues':>6} {'procs':>5} {'payload':>8} "
          f"{'drain/s':>8} {'vs 1,000':>8}")
    for scenario in chosen:
        rate = rates[scenario.name]
        ratio = f"{rate / base:.2f}x" if base else "-"
        print(f"{scenario.name:<18} {scenario.queued:>10,} {scenario.queues:>6} "
              f"{scenario.processes:>5} {scenario.payload_bytes:>8,} {rate:>8,.0f} {ratio:>8}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
