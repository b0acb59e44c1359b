"""The job body every system runs, so only the queue machinery around it differs.

Imports nothing but redis-py and the standard library: it runs in the project's environment
(django_qless) and in the competitors' virtualenv alike. The Redis URL comes from
$BENCH_REDIS_URL; each process opens its own connection on first use (after any fork).
"""

from __future__ import annotations

import os
import threading
import time

import redis

COUNT = "bench:count"  # INCR per executed job
FIRST = "bench:first"  # time.time() when the first job started (SET NX)
LAST = "bench:last"  # time.time() when the latest job ended
LATENCY = "bench:latency"  # one "start - put" float per latency job
KEYS = (COUNT, FIRST, LAST, LATENCY)

_client: redis.Redis | None = None
_pid = 0
# Worker threads (huey's) start their first jobs together: one client must win, or the
# loser's connections are closed under the thread still using them.
_lock = threading.Lock()


def client() -> redis.Redis:
    """This process's connection (a new one after fork: sockets must not be shared)."""
    global _client, _pid
    with _lock:
        if _client is None or _pid != os.getpid():
            _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
            _pid = os.getpid()
        return _client


def noop() -> None:
    """Count one execution: a single round trip, as cheap as a job that does anything."""
    started = time.time()
    pipe = client().pipeline(transaction=False)
    pipe.set(FIRST, started, nx=True)
    pipe.incr(COUNT)
    pipe.set(LAST, time.time())
    pipe.execute()


def latency(put_at: float) -> None:
    """Record how long after its put this job started."""
    client().rpush(LATENCY, time.time() - put_at)
