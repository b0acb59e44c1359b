"""Floors: what a put and a job cost here before any queue's own work, beside django_qless's.

Run: python bench/floors.py [--calls N] [--rounds R] [--redis-server PATH]

One private redis-server; every call goes one at a time, as a single `.enqueue()` or a
worker's job sends it. Per line: calls/s (wall clock), the client's CPU per call
(`time.process_time`, this process) and Redis' main-thread CPU per call (`INFO cpu`,
network and parsing included); medians of the rounds, which take turns line by line.

The lines, and what each call sends:

- `LPUSH, redis-py`: `LPUSH` of a 200-byte message through redis-py, a huey or RQ put's
  shape.
- `FCALL no-op, a put's arguments`: a function that only returns its jid argument, called
  with a qless put's arguments, pre-packed, on a kept connection: any scripted put before
  its script does anything.
- `put, pre-packed`: django_qless's `put` as its client sends it (FCALL of the library),
  pre-packed, on a kept connection: the put's Redis work with no Python around it.
- `enqueue`: a registered job's `.enqueue()`, the whole single put.
- `job body`: the worker bench's job body (`bench/e2e/apps/jobbody.py`) on its own.
- `job body + FCALL no-op`: the body, then one no-op FCALL round trip: the least a worker
  pays per job when it tells Redis about each job as it ends (one completion a job, so a
  killed worker runs again at most the job it was running).

The last line is a floor for a worker's job, for any queue that reports jobs one by one;
the first three show how much of a put's Redis time is the round trip, the script call
and the script's own work.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/floors.py` puts bench/, not the root, on the path
    sys.path.insert(0, str(ROOT))

from enqueue import (  # noqa: E402 - bench/, beside this file
    django_on_private_redis,
    print_medians,
    redis_cpu,
)

from tests.redis_harness import RedisServer  # noqa: E402

#: A function that answers with its jid argument (args: command, clock, worker, queue, jid).
NOOP_LIBRARY = """#!lua name=bench_floors
redis.register_function('bench_floors_noop', function(keys, args) return args[5] end)
"""
MESSAGE = b"m" * 200


def measure(client: redis.Redis, calls: int, run: Callable[[], None]) -> dict[str, float]:
    """Time one block of `calls` calls; its figures per call."""
    server0 = redis_cpu(client)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    run()
    cpu1, wall1 = time.process_time(), time.perf_counter()
    server1 = redis_cpu(client)
    return {
        "calls/s": calls / (wall1 - wall0),
        "client CPU us/call": (cpu1 - cpu0) / calls * 1e6,
        "Redis CPU us/call": (server1 - server0) / calls * 1e6,
    }


def prepacked(connection: redis.connection.Connection, packed: list[bytes],
              jids: list[bytes]) -> Callable[[], None]:
    """Send each pre-packed call and read its reply, one at a time; each must answer its jid."""

    def run() -> None:
        for data, jid in zip(packed, jids, strict=True):
            connection.send_packed_command([data])
            reply = connection.read_response()
            if reply != jid:
                raise SystemExit(f"unexpected reply {reply!r}, expected {jid!r}")

    return run


def lines(server: RedisServer, calls: int) -> dict[str, Callable[[], None]]:
    """The calls of each line, set up (connections, packed bytes) outside the timing; the
    puts reuse their jids from round to round, so the database is flushed before each."""
    import jobbody  # noqa: PLC0415 - on the path from main()
    from bench_enqueue_job import record  # noqa: PLC0415 - needs the app registry

    from django_qless.connection import get_client  # noqa: PLC0415
    from django_qless.core import commands  # noqa: PLC0415
    from django_qless.core.batch import pack  # noqa: PLC0415

    client = get_client()
    client.redis.function_load(NOOP_LIBRARY, replace=True)
    script = client.script
    record.enqueue(0)  # loads the library, so puts go as FCALL as they do in production
    connection = client.redis.connection_pool.get_connection()
    plain = server.client()

    def lpush() -> None:
        for _ in range(calls):
            plain.lpush("floors:list", MESSAGE)

    put_calls = [commands.put("floors", "q", uuid.uuid4().hex, "bench.record",
                              '{"args":[1],"kwargs":{}}', 0) for _ in range(calls)]
    puts = [pack(script, client.now(), [command]) for command in put_calls]
    jids = [command.args[2].encode() for command in put_calls]
    head = b"*%d\r\n$5\r\nFCALL\r\n$17\r\nbench_floors_noop\r\n$1\r\n0\r\n"
    # The library's call swapped for the no-op's: the same arguments, byte for byte.
    noops = [head % (len(command.args) + 5) + put.split(b"\r\n$1\r\n0\r\n", 1)[1]
             for command, put in zip(put_calls, puts, strict=True)]

    def enqueue() -> None:
        for i in range(calls):
            record.enqueue(i)

    def body() -> None:
        for _ in range(calls):
            jobbody.noop()

    completion = noops[0]

    def body_and_noop() -> None:
        for _ in range(calls):
            jobbody.noop()
            connection.send_packed_command([completion])
            connection.read_response()

    return {
        "LPUSH, redis-py": lpush,
        "FCALL no-op, a put's arguments": prepacked(connection, noops, jids),
        "put, pre-packed": prepacked(connection, puts, jids),
        "enqueue": enqueue,
        "job body": body,
        "job body + FCALL no-op": body_and_noop,
    }


def main() -> None:
    """Start Redis, set up every line, time them in turns and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis-server", default=None)
    options = parser.parse_args()

    with django_on_private_redis(options.redis_server) as server:
        plain = server.client()
        runs = lines(server, options.calls)
        samples: dict[str, list[dict[str, float]]] = {}
        for round_number in range(options.rounds + 1):  # round 0 warms up
            for name, run in runs.items():
                plain.flushall()
                figures = measure(plain, options.calls, run)
                if round_number:
                    samples.setdefault(name, []).append(figures)
        print_medians(plain, f"{options.calls:,} calls x {options.rounds} rounds", "line", 34,
                      samples)


if __name__ == "__main__":
    main()
