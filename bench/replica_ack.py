"""What REPLICA_ACK costs: put and complete latency with and without WAIT, on loopback.

A private primary and one replica (`tests/redis_harness.py`). The same client code puts N
jobs one at a time, then pops and completes them one at a time, once with a plain client
and once with `ReplicaAck(1, timeout)`; the two take turns in blocks so background load
falls on both. Prints per-call latency percentiles and calls per second.

    python bench/replica_ack.py [--jobs 5000] [--block 500] [--timeout 0.5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `python bench/replica_ack.py` puts bench/, not the root, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from django_qless.core import Client, ReplicaAck, ReplicationError  # noqa: E402
from tests.redis_harness import RedisServer  # noqa: E402


def put_block(client: Client, prefix: str, count: int) -> tuple[list[float], int]:
    """Seconds each of `count` puts took, and how many no replica confirmed in time."""
    took = []
    short = 0
    for n in range(count):
        started = time.perf_counter()
        try:
            client.queue("q").put("K", {"n": n}, jid=f"{prefix}-{n}")
        except ReplicationError:
            short += 1  # written, but not confirmed within the timeout: counted, not timed
            continue
        took.append(time.perf_counter() - started)
    return took, short


def complete_block(client: Client, count: int) -> list[float]:
    """Seconds each pop + complete took (both in the timing: a worker pays both)."""
    took = []
    for _ in range(count):
        started = time.perf_counter()
        popped = client.queue("q").pop()
        if popped:  # an unconfirmed put was written all the same: there is always a job
            popped[0].complete()
        took.append(time.perf_counter() - started)
    return took


def summary(name: str, took: list[float]) -> str:
    """One line: median, p95, p99 in microseconds, and calls per second."""
    ordered = sorted(took)

    def pick(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1e6

    rate = len(took) / sum(took)
    return (f"{name:<24} p50 {statistics.median(took) * 1e6:7.0f} us   p95 {pick(0.95):7.0f} us"
            f"   p99 {pick(0.99):7.0f} us   {rate:8.0f}/s")


def main() -> None:
    """Start the servers, run the blocks, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--block", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=0.5)
    options = parser.parse_args()
    primary = RedisServer(extra_args=("--repl-diskless-sync-delay", "0")).start()
    replica = RedisServer(extra_args=("--replicaof", "127.0.0.1", str(primary.port))).start()
    try:
        synced = primary.client().execute_command("WAIT", 1, 5000)  # type: ignore[no-untyped-call]
        assert synced == 1, "the replica never synced"
        clients = {
            "plain": Client(primary.client()),
            "replica_ack": Client(primary.client(), replica_ack=ReplicaAck(1, options.timeout)),
        }
        puts: dict[str, list[float]] = {name: [] for name in clients}
        completes: dict[str, list[float]] = {name: [] for name in clients}
        unconfirmed = 0
        for start in range(0, options.jobs, options.block):
            for name, client in clients.items():
                took, short = put_block(client, f"{name}-{start}", options.block)
                puts[name] += took
                unconfirmed += short
                completes[name] += complete_block(client, options.block)
        version = ".".join(map(str, primary.version))
        print(f"redis-server {version}, 1 replica on loopback, {options.jobs} jobs per client, "
              f"WAIT 1 {ReplicaAck(1, options.timeout).timeout_ms}")
        for name in clients:
            print(summary(f"put ({name})", puts[name]))
        for name in clients:
            print(summary(f"pop+complete ({name})", completes[name]))
        print(f"puts not confirmed by the replica within the timeout: {unconfirmed}")
        ratio = statistics.median(puts["replica_ack"]) / statistics.median(puts["plain"])
        print(f"put median with WAIT / without: {ratio:.2f}")
    finally:
        replica.stop()
        primary.stop()


if __name__ == "__main__":
    main()
