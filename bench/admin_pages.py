"""Render times of the admin pages over a queue of 1,000,000 waiting jobs.

Run: python bench/admin_pages.py [--jobs N] [--repeat R] [--redis-server PATH]

Starts a private redis-server, fills one queue with N waiting jobs (pipelined `put`
calls), logs a superuser into the admin with Django's test client and times each page
(median of R renders). It also reports the slowest Redis command the pages ran
(SLOWLOG, threshold 10 ms) and whether any page used KEYS or SCAN. The target is
every page under one second with no command over 10 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # running the file puts bench/, not the root, on the path
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client as HttpClient  # noqa: E402
from django.test.utils import override_settings, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from tests.conftest import LuaScript  # noqa: E402
from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402

QUEUE = "big"
KLASS = "bench.Job"
BUDGET = 1.0
SLOW_MICROSECONDS = 10_000
BLOCK = 5_000


def fill(lua: LuaScript, jobs: int) -> float:
    """Put `jobs` waiting jobs into the queue; returns the seconds it took."""
    started = time.perf_counter()
    now = time.time()
    for start in range(0, jobs, BLOCK):
        pipe = lua.client.pipeline(transaction=False)
        for i in range(start, min(start + BLOCK, jobs)):
            args = ["put", now, "bench", QUEUE, f"job-{i:07d}", KLASS, f'{{"n": {i}}}', 0,
                    "priority", i % 5]
            lua.script(keys=[], args=args, client=pipe)
        pipe.execute()
    return time.perf_counter() - started


def page_url(route: str, query: str = "", /, **kwargs: str) -> str:
    """An admin URL of the app on the default connection."""
    return reverse(f"admin:django_qless_{route}", kwargs={"alias": "default", **kwargs}) + query


def pages(jobs: int) -> dict[str, str]:
    """The pages to time."""
    last = max(1, -(-jobs // 25))
    middle = last // 2
    return {
        "overview": page_url("overview"),
        "queues": page_url("queues"),
        "queue stats tab": page_url("queue", "?tab=stats", name=QUEUE),
        "waiting, page 1": page_url("queue", "?tab=waiting", name=QUEUE),
        f"waiting, page {middle}": page_url("queue", f"?tab=waiting&page={middle}", name=QUEUE),
        f"waiting, page {last} (last)": page_url("queue", f"?tab=waiting&page={last}", name=QUEUE),
        "job page": page_url("job", jid=f"job-{jobs // 2:07d}"),
        "tracked": page_url("tracked"),
        "search": page_url("search"),
        "metrics (Prometheus)": reverse("django_qless:metrics"),
    }


def time_page(client: HttpClient, path: str, repeat: int) -> float:
    """Median seconds to render a page."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(path)
        timings.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"{path}: HTTP {response.status_code}")
    return statistics.median(timings)


def logged_in_client() -> HttpClient:
    """A test client logged in as a superuser (database created in memory)."""
    setup_test_environment()  # lets the test client's host in
    call_command("migrate", verbosity=0, run_syncdb=True)
    user = User.objects.create_superuser("bench")
    client = HttpClient()
    client.force_login(user)
    return client


def report(lua: LuaScript, client: HttpClient, jobs: int, repeat: int) -> bool:
    """Time every page and print a table; True when all are within budget."""
    lua.client.config_set("slowlog-log-slower-than", SLOW_MICROSECONDS)
    lua.client.slowlog_reset()
    lua.client.config_resetstat()
    ok = True
    print(f"{'page':<28} {'median ms':>10}  under {BUDGET:.0f} s")
    for name, path in pages(jobs).items():
        seconds = time_page(client, path, repeat)
        ok &= seconds < BUDGET
        print(f"{name:<28} {seconds * 1000:>10.1f}  {'yes' if seconds < BUDGET else 'NO'}")
    slow: list[Any] = lua.client.slowlog_get(128)
    scans = {"cmdstat_keys", "cmdstat_scan"} & set(lua.client.info("commandstats"))
    worst = max((entry["duration"] for entry in slow), default=0)
    print(f"Redis commands over {SLOW_MICROSECONDS / 1000:.0f} ms: {len(slow)}"
          f" (slowest {worst / 1000:.1f} ms); KEYS/SCAN used: {'yes' if scans else 'no'}")
    return ok and not slow and not scans


def main() -> int:
    """Parse options, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--redis-server", default=None)
    options = parser.parse_args()
    server = RedisServer(binary=options.redis_server or find_redis_server()).start()
    try:
        lua = LuaScript(server.client(decode_responses=True))
        with override_settings(QLESS={"URL": server.url}):
            print(f"filled {options.jobs:,} waiting jobs in {fill(lua, options.jobs):.1f} s "
                  f"(redis-server {'.'.join(map(str, server.version))})")
            ok = report(lua, logged_in_client(), options.jobs, options.repeat)
    finally:
        server.stop()
    print("all pages within budget" if ok else "SOME PAGES OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
