"""The job body every system runs, so only the queue machinery around it differs.

Imports nothing but redis-py and the standard library: it runs in the project's environment
(django_qless) and in the competitors' virtualenv alike. The Redis URL comes from
$BENCH_REDIS_URL; each process opens its own connection on first use (after any fork).

The I/O jobs of bench/io_e2e.py wait IO_SECONDS (time.sleep, asyncio.sleep, or an HTTP GET
to $BENCH_HTTP_URL, a local server answering after that long), then count themselves as
the no-op does, in one round trip at their end.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Callable

import redis

COUNT = "bench:count"  # INCR per executed job
FIRST = "bench:first"  # time.time() when the first job started (SET NX)
LAST = "bench:last"  # time.time() when the latest job ended
LATENCY = "bench:latency"  # one "start - put" float per latency job
KEYS = (COUNT, FIRST, LAST, LATENCY)
#: Connections one process may open to Redis, for the bench and the queues' own clients.
MAX_CONNECTIONS = 1000
#: How long every I/O job waits.
IO_SECONDS = 0.05

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
            # Room for every thread of a 200-thread pool (redis-py's default stops at 100).
            _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"],
                                           max_connections=MAX_CONNECTIONS)
            _pid = os.getpid()
        return _client


def noop() -> None:
    """Count one execution: a single round trip, as cheap as a job that does anything."""
    record(time.time())


def record(started: float, put_at: float = 0.0) -> None:
    """Stamp the start and the end, count the job and, for a pickup sample, its latency."""
    pipe = client().pipeline(transaction=False)
    if put_at:
        pipe.rpush(LATENCY, started - put_at)
    pipe.set(FIRST, started, nx=True)
    pipe.incr(COUNT)
    pipe.set(LAST, time.time())
    pipe.execute()


def latency(put_at: float) -> None:
    """Record how long after its put this job started."""
    client().rpush(LATENCY, time.time() - put_at)


def io_sleep(put_at: float) -> None:
    """Block the thread (a greenlet under gevent) for IO_SECONDS."""
    started = time.time()
    time.sleep(IO_SECONDS)
    record(started, put_at)


async def io_async(put_at: float) -> None:
    """Wait IO_SECONDS on the running event loop."""
    started = time.time()
    await asyncio.sleep(IO_SECONDS)
    # One blocking round trip, as every kind pays: the job bodies differ only in the wait.
    record(started, put_at)


def io_async_blocking(put_at: float) -> None:
    """The async job where the queue has no event loop: asyncio.run per job in a thread;
    a greenlet sleep under gevent (where one loop per greenlet cannot run)."""
    if "gevent.monkey" in sys.modules and sys.modules["gevent.monkey"].is_module_patched("time"):
        io_sleep(put_at)
    else:
        asyncio.run(io_async(put_at))


def io_http(put_at: float) -> None:
    """GET the local slow server (a new connection, as urllib makes) and read its answer."""
    started = time.time()
    url = os.environ["BENCH_HTTP_URL"]  # the bench's own server on 127.0.0.1
    with _DIRECT.open(url, timeout=60) as response:
        response.read()
    record(started, put_at)


#: No proxy, whatever $http_proxy says: the server is on this machine.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))

#: The synchronous body of each I/O kind, for queues with one task for all three.
IO_BODIES: dict[str, Callable[[float], None]] = {
    "sleep": io_sleep, "async": io_async_blocking, "http": io_http}


def run_io(kind: str, put_at: float) -> None:
    """Run the I/O job of `kind` (sleep, async, http) synchronously."""
    IO_BODIES[kind](put_at)


def put_io(kind: str, put_at: float, put_async: Callable[[float], object],
           put_sync: Callable[[str, float], object]) -> None:
    """Put the async job for kind "async" where the queue runs coroutines, else the sync one."""
    if kind == "async":
        put_async(put_at)
    else:
        put_sync(kind, put_at)
