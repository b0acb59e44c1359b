"""The scenarios, run against one system: pre-filled drain, put-while-draining, latency, and
pickup (latency of the jobs bench/io_e2e.py puts, on a worker started for it).

Every job runs the same body (apps/jobbody.py): it counts itself with INCR and stamps the
first start and the latest end, so the drain time is read from the jobs themselves and the
poll below only decides when to stop waiting.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from .cpu import CpuMark, Reaped, descendants, kill_if_same, redis_cpu, tree_rss
from .systems import APPS, ROOT, System

COUNT, FIRST, LAST, LATENCY = "bench:count", "bench:first", "bench:last", "bench:latency"
POLL = 0.02
#: Give up when the job count has not moved for this long.
STALL = 60.0
#: ...or when a scenario runs slower than this many jobs/s overall (a worker stuck in an
#: error loop still moves the count now and then). The slowest system here does ~100/s.
FLOOR_RATE = 20.0
#: Every scenario, in the order `Bench.run` takes them by default.
SCENARIOS = ("drain", "live_and_latency")


class BenchError(RuntimeError):
    """A scenario could not be measured (worker died, jobs stalled)."""


@dataclass
class Result:
    """What one system did in one round; None where not measured."""

    system: str
    put_rate: float | None = None
    drain_rate: float | None = None
    drain_wall_rate: float | None = None
    live_rate: float | None = None
    #: CPU milliseconds per job during the drain (first job to last): worker group, Redis.
    worker_cpu_ms: float | None = None
    redis_cpu_ms: float | None = None
    #: Per put of the pre-fill: the producer's CPU and Redis's CPU, in microseconds.
    put_client_us: float | None = None
    put_redis_us: float | None = None
    #: Redis memory a queued job takes (used_memory growth over the pre-fill / jobs).
    bytes_per_job: float | None = None
    #: Resident megabytes of the worker's process tree half-way through the drain.
    rss_mb: float | None = None
    #: drain_rate over the system's ideal rate, where it has one (bench/io_e2e.py).
    ideal_fraction: float | None = None
    latencies: list[float] = field(default_factory=list)
    duplicates: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Bench:
    """Runs scenarios for one system on one Redis database."""

    system: System
    url: str
    jobs: int
    samples: int
    spacing: float
    logs: Path
    #: Added to the system's environment (bench/io_e2e.py: the job kind).
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.redis = redis.Redis.from_url(self.url)
        self.env = {**self.system.env(self.url), **self.extra_env}

    # Scenarios.

    def run(self, result: Result, scenarios: tuple[str, ...] = SCENARIOS) -> None:
        """The named scenarios; a failing one is recorded and the next still runs."""
        for name in scenarios:
            try:
                getattr(self, name)(result)
            except BenchError as exc:
                result.errors.append(f"{name}: {exc}")

    def clear(self) -> None:
        """Empty the system's Redis database, and its own store where it has one."""
        self.redis.flushdb()
        if self.system.reset is not None:
            self.system.reset(self.system, self.env)

    def drain(self, result: Result) -> None:
        """Pre-fill the queue, then time a worker (burst where it has one) until all ran."""
        self.clear()
        # Only this system runs now: empty every database, so keys another system left with
        # a TTL cannot expire during the pre-fill and make its memory figure negative.
        self.redis.flushall()
        memory, server = self.used_memory(), redis_cpu(self.redis)
        report = self.run_driver("put", str(self.jobs))
        result.put_rate = self.jobs / max(float(report["seconds"]), 1e-9)
        result.put_client_us = float(report.get("cpu", 0.0)) / self.jobs * 1e6
        result.put_redis_us = (redis_cpu(self.redis) - server) / self.jobs * 1e6
        result.bytes_per_job = (self.used_memory() - memory) / self.jobs
        if self.count() != 0:
            raise BenchError("jobs ran before any worker started")
        spawned = time.time()
        worker = self.spawn_worker(burst=self.system.has_burst, tag="drain")
        try:
            reaped = Reaped(worker)
            self.wait_count(1, reaped, exits=self.system.has_burst)
            start = CpuMark.take(reaped, self.redis)
            counted = self.count()
            # Half-way, every slot is busy and no burst worker has begun to exit.
            self.wait_count(max(counted, self.jobs // 2), reaped, exits=self.system.has_burst)
            result.rss_mb = tree_rss(worker.pid) if reaped.alive() else None
            self.wait_count(self.jobs, reaped, exits=self.system.has_burst)
            end = CpuMark.take(reaped, self.redis)
            ran = self.count() - counted
            if start.worker is not None and end.worker is not None and ran > 0:
                result.worker_cpu_ms = (end.worker - start.worker) / ran * 1000
            result.redis_cpu_ms = (end.server - start.server) / max(ran, 1) * 1000
            first, last = self.stamps()
            result.drain_rate = self.jobs / (last - first)
            result.drain_wall_rate = self.jobs / (last - spawned)
            if self.system.ideal_rate:
                result.ideal_fraction = result.drain_rate / self.system.ideal_rate
            if self.system.has_burst:
                self.wait_exit(worker)
        finally:
            stop(worker)
        result.duplicates += self.count() - self.jobs

    def live_and_latency(self, result: Result) -> None:
        """Idle worker: time a producer putting while it drains, then pickup latency."""
        self.clear()
        worker = self.spawn_worker(burst=False, tag="live")
        try:
            self.put(1)  # proves the worker is up and has taken a job
            self.wait_count(1, Reaped(worker))
            self.redis.delete(COUNT, FIRST, LAST)
            producer = self.spawn_driver("put", str(self.jobs))
            self.wait_count(self.jobs, Reaped(worker))
            started = finish(producer)["started"]  # the first put, after the imports
            result.live_rate = self.jobs / (self.stamps()[1] - started)
            result.duplicates += self.count() - self.jobs
            self.sample_latency(worker, result)
        finally:
            stop(worker)

    def pickup(self, result: Result) -> None:
        """A worker started for it, warm (one job run): put-to-start latency of spaced jobs."""
        self.clear()
        worker = self.spawn_worker(burst=False, tag="pickup")
        try:
            self.put(1)
            self.wait_count(1, Reaped(worker))
            self.sample_latency(worker, result)
        finally:
            stop(worker)

    def sample_latency(self, worker: subprocess.Popen[str], result: Result) -> None:
        """Let the worker go idle, then put the latency jobs `spacing` apart and collect them."""
        time.sleep(1.0)  # idle from here on
        self.run_driver("latency", str(self.samples), str(self.spacing))
        self.wait_latencies(worker)
        result.latencies += [float(v) for v in self.redis.lrange(LATENCY, 0, -1)]

    # Helpers.

    def put(self, count: int) -> float:
        """Put `count` no-op jobs through the system's driver; returns its put rate."""
        report = self.run_driver("put", str(count))
        return count / max(float(report["seconds"]), 1e-9)

    def run_driver(self, *args: str) -> dict[str, float]:
        """Run the driver to completion and return its JSON report."""
        proc = self.spawn_driver(*args)
        return finish(proc)

    def spawn_driver(self, *args: str) -> subprocess.Popen[str]:
        """Start the driver (in the system's interpreter) without waiting."""
        argv = [self.system.python, str(APPS / "driver.py"), self.system.driver_module, *args]
        return subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def spawn_worker(self, *, burst: bool, tag: str) -> subprocess.Popen[str]:
        """Start the worker in its own process group, logging to a file."""
        log = (self.logs / f"{self.system.name}-{tag}.log").open("a", encoding="utf-8")
        with log:
            return subprocess.Popen(self.system.worker(self.url, burst), cwd=ROOT, env=self.env,
                                    stdout=log, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)

    def used_memory(self) -> int:
        """Bytes redis-server holds for data now."""
        return int(self.redis.info("memory")["used_memory"])

    def count(self) -> int:
        """Jobs executed so far."""
        return int(self.redis.get(COUNT) or 0)

    def stamps(self) -> tuple[float, float]:
        """First job start and latest job end."""
        first, last = self.redis.mget(FIRST, LAST)
        if first is None or last is None:
            raise BenchError("no job stamps")
        return float(first), float(last)

    def wait_count(self, target: int, worker: Reaped, *, exits: bool = False) -> None:
        """Poll until `target` jobs ran; fail on a stall or a worker that died early."""
        seen, moved = -1, time.monotonic()
        allowed = STALL + target / FLOOR_RATE
        deadline = moved + allowed
        while (done := self.count()) < target:
            if done != seen:
                seen, moved = done, time.monotonic()
            elif time.monotonic() - moved > STALL:
                raise BenchError(f"stalled at {done}/{target} jobs")
            if time.monotonic() > deadline:
                raise BenchError(f"only {done}/{target} jobs in {allowed:.0f}s; "
                                 f"see {self.logs}")
            if not worker.alive() and (not exits or self.count() < target):
                raise BenchError(f"worker exited ({worker.popen.returncode}) at {done}/{target} "
                                 f"jobs; see {self.logs}")
            time.sleep(POLL)

    def wait_latencies(self, worker: subprocess.Popen[str]) -> None:
        """Poll until every latency job recorded its sample."""
        deadline = time.monotonic() + STALL
        while self.redis.llen(LATENCY) < self.samples:
            if worker.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"{self.redis.llen(LATENCY)}/{self.samples} latency samples")
            time.sleep(POLL)

    def wait_exit(self, worker: subprocess.Popen[str]) -> None:
        """A burst worker must exit by itself once the queue is empty."""
        try:
            worker.wait(timeout=STALL)
        except subprocess.TimeoutExpired:
            raise BenchError("burst worker did not exit") from None


def finish(proc: subprocess.Popen[str]) -> dict[str, float]:
    """Wait for a driver and parse its report."""
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise BenchError(f"driver failed ({proc.returncode}): {err.strip()[-2000:]}")
    report: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return report


def stop(proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Stop a worker we started: SIGTERM, SIGKILL if it lingers, then any leftover child."""
    tree = descendants(proc.pid)
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=timeout)
    # Pool children may outlive their parent (or sit in process groups of their own).
    _signal_group(proc, signal.SIGKILL)
    for pid, started in tree[1:]:
        kill_if_same(pid, started)


def _signal_group(proc: subprocess.Popen[str], signum: int) -> None:
    """Signal the process group the worker leads (it was started in a new session)."""
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(int(-(-fraction * len(ordered) // 1)), 1)
    return ordered[rank - 1]


def median(values: list[float | None]) -> float | None:
    """Median of the measured values, None when nothing was measured."""
    measured = [value for value in values if value is not None]
    return statistics.median(measured) if measured else None
