"""Render times of every admin page over a queue of 1,000,000 waiting jobs.

Run: python bench/admin_pages.py [--jobs N] [--side S] [--repeat R] [--redis-server PATH]

Starts a private redis-server, fills one queue with N waiting jobs (pipelined `put`
calls, every tenth tagged), adds S failed, completed and scheduled jobs, 100 workers
holding jobs, dependencies, tracked jobs and recurring templates, one of each thing the
overview's "What is stuck" lists (silent workers holding stalled jobs, 1,000 jobs waiting
on failed ones, overdue recurring templates and cron slots, a paused queue), logs a superuser into
the admin with Django's test client and times every page the admin routes list, each
tab of the queue page and both ends of the long lists (median of R renders), and the
live refreshes of the pages that refresh themselves (the same URL with `X-Qless-Live`),
over an hour of throughput and depth samples of 100 queues, and a week of them per 15
minutes and per hour (the overview timed at each range, with deploy markers), the
Functions pages over a week of per-function figures of `FUNCTIONS` klasses, and the steps
of a bulk run (a collect step over the big queue, an apply chunk retrying side jobs); it
stops if a page is
missing from its list. It also reports the slowest Redis command the pages ran
(SLOWLOG, threshold 10 ms) and whether any page used KEYS or SCAN. The target is
every page under one second with no command over 10 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
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
from django.urls import resolve, reverse  # noqa: E402

from django_qless.admin import stuck  # noqa: E402
from django_qless.admin.bulk_all import CHUNK  # noqa: E402
from django_qless.admin.live_requests import HEADER  # noqa: E402
from django_qless.admin.routes import ROUTES  # noqa: E402
from django_qless.admin.views.queues import TABS  # noqa: E402
from django_qless.core import Client, QueueCounts, keys, ms_buckets  # noqa: E402
from django_qless.core import fn_metrics as fm  # noqa: E402
from django_qless.core.crons import CronStore  # noqa: E402
from django_qless.core.deploys import mark_deploy  # noqa: E402
from django_qless.core.latency import latencies  # noqa: E402
from django_qless.core.live import MINUTES, SPANS, add_throughput, read_history  # noqa: E402
from django_qless.core.presence import Presence, publish  # noqa: E402
from tests.conftest import LuaScript  # noqa: E402
from tests.recurring.cron_helpers import define  # noqa: E402
from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402

QUEUE = "big"
#: A second queue, where the failed and completed jobs ran.
SIDE = "side"
TAGS = '["bench"]'

#: Workers holding jobs of the big queue, each with a published presence.
WORKERS = 100
KLASS = "bench.Job"
BUDGET = 1.0
#: A search over the big queue that matches nothing: every request walks its whole budget.
WALK = f"queue={QUEUE}&state=waiting&klass=bench.Other"
SLOW_MICROSECONDS = 10_000
BLOCK = 5_000
#: Queues in the live overview's hour of throughput and depth samples.
LIVE_QUEUES = 100
#: Job functions with a week of per-function figures (each with ~15 run-time and ~15
#: wait-time buckets in every slot of every resolution).
FUNCTIONS = 50
#: Suffix of the names of live refreshes in the table of timed pages.
LIVE = " (live refresh)"
#: The queue of the "What is stuck" situations, and the silent workers holding its jobs.
STUCK = "stuck"
SILENT_WORKERS = 20


def fill(lua: LuaScript, jobs: int) -> float:
    """Put `jobs` waiting jobs (every tenth tagged) into the queue; returns the seconds taken."""
    started = time.perf_counter()
    now = time.time()
    for start in range(0, jobs, BLOCK):
        pipe = lua.client.pipeline(transaction=False)
        for i in range(start, min(start + BLOCK, jobs)):
            args: list[str | float] = ["put", now, "bench", QUEUE, f"job-{i:07d}", KLASS,
                                       f'{{"n": {i}}}', 0, "priority", i % 5]
            if i % 10 == 0:
                args += ["tags", TAGS]
            lua.script(keys=[], args=args, client=pipe)
        pipe.execute()
    return time.perf_counter() - started


def run_script(lua: LuaScript, calls: list[list[Any]]) -> None:
    """Run script calls pipelined, `BLOCK` at a time."""
    for start in range(0, len(calls), BLOCK):
        pipe = lua.client.pipeline(transaction=False)
        for args in calls[start:start + BLOCK]:
            lua.script(keys=[], args=args, client=pipe)
        pipe.execute()


def fill_the_rest(lua: LuaScript, side: int) -> None:
    """Beside the big queue: `side` failed, completed and scheduled jobs, and the others.

    Failed jobs spread over five groups, running jobs held by 100 workers (each with a
    published presence), jobs waiting on dependencies, tracked jobs and recurring
    templates, so that every page has rows to show.
    """
    now = time.time()
    done = [f"done-{i:06d}" for i in range(side)]
    failed = [f"failed-{i:06d}" for i in range(side)]
    run_script(lua, [["put", now, "bench", SIDE, jid, KLASS, "{}", 0] for jid in done + failed])
    run_script(lua, [["pop", now, SIDE, "bench", BLOCK] for _ in range(0, 2 * side, BLOCK)])
    run_script(lua, [["complete", now, jid, "bench", SIDE, "{}"] for jid in done])
    run_script(lua, [["fail", now, jid, "bench", f"bench.Error{i % 5}", "boom", "{}"]
                     for i, jid in enumerate(failed)])
    run_script(lua, [["put", now, "bench", QUEUE, f"later-{i:06d}", KLASS, "{}", 3600 + i]
                     for i in range(side)])
    run_script(lua, [["put", now, "bench", QUEUE, f"after-{i:04d}", KLASS, "{}", 0,
                      "depends", f'["later-{i:06d}"]'] for i in range(1000)])
    run_script(lua, [["track", now, "track", f"job-{i:07d}"] for i in range(100)])
    run_script(lua, [["recur", now, QUEUE, f"recur-{i:02d}", KLASS, "{}", "interval", 60, 0]
                     for i in range(50)])
    for w in range(WORKERS):
        lua.script(keys=[], args=["pop", now, QUEUE, f"worker-{w:03d}", 10])
        publish(Client(lua.client), Presence(
            name=f"worker-{w:03d}", host="bench", pid=1000 + w, version="bench",
            queues=(QUEUE,), started=now, seen=now, done=0, failed=0, rss_bytes=50 << 20,
            running=()), ttl=3600)


def fill_stuck(lua: LuaScript, side: int) -> None:
    """What the overview's "What is stuck" lists, an hour old: silent workers holding stalled
    jobs, jobs waiting on failed ones, an overdue recurring template and cron schedule with
    a slot job not run, and a paused queue."""
    now = time.time()
    past = Client(lua.client, worker_name="gone", clock=lambda: now - 3600)
    for w in range(SILENT_WORKERS):
        lua.script(keys=[], args=["put", now - 3600, "bench", STUCK, f"held-{w:03d}", KLASS,
                                  "{}", 0])
        lua.script(keys=[], args=["pop", now - 3600, STUCK, f"silent-{w:03d}", 1])
    run_script(lua, [["put", now, "bench", STUCK, f"blocked-{i:04d}", KLASS, "{}", 0,
                      "depends", f'["failed-{i:06d}"]'] for i in range(min(1000, side))])
    past.queue(STUCK).recur(KLASS, {}, 86400, jid="overdue-template")
    define(past, "* * * * *", name="overdue-cron")
    CronStore(past).create_slots("overdue-cron")
    Client(lua.client).queue(STUCK).pause()


def fill_live_hour(client: Client) -> None:
    """A full hour of throughput (every outcome) and depth samples for `LIVE_QUEUES` queues,
    as busy workers leave it for the overview."""
    now = time.time()
    names = [f"live-{number:03d}" for number in range(LIVE_QUEUES)]
    for back in range(MINUTES):
        pipe = client.redis.pipeline(transaction=False)
        add_throughput(pipe, Counter({(name, outcome): 100 + back for name in names
                                      for outcome in ("completed", "failed", "retried")}),
                       now - 60 * back)
        pipe.execute()
        read_history(client, now - 60 * back,
                     offer=[QueueCounts(name, waiting=1000, running=10) for name in names])


def fill_live_week(client: Client) -> None:
    """The same figures per 15 minutes over the last 24 hours and per hour over the last 7
    days (written as workers write them, with the minute), and a deploy a day."""
    now = time.time()
    names = [f"live-{number:03d}" for number in range(LIVE_QUEUES)]
    day, week = SPANS["24h"], SPANS["7d"]
    moments = [now - day.seconds * back for back in range(1, day.slots)]
    moments += [now - week.seconds * back for back in range(24, week.slots)]
    for at in moments:
        pipe = client.redis.pipeline(transaction=False)
        add_throughput(pipe, Counter({(name, outcome): 100 for name in names
                                      for outcome in ("completed", "failed", "retried")}), at)
        pipe.execute()
        read_history(client, at, offer=[QueueCounts(name, waiting=1000, running=10)
                                        for name in names])
    for back in range(7):
        mark_deploy(client.redis, f"bench deploy {back}", now - 86400 * back - 1800)


def function_slot(klasses: list[str], spread: int = 15) -> dict[str, int]:
    """One slot's fields as busy workers leave them: every klass ran, in `spread` buckets."""
    fields: dict[str, int] = {}
    for number, klass in enumerate(klasses):
        first = 5 + number % 15
        for kind, amount in ((fm.EXECUTIONS, 300), (fm.COMPLETED, 290), (fm.FAILED, 6),
                             (fm.RETRIED, 4), (fm.RUN_MS, 300 * 40 * (1 + number % 15))):
            fields[fm.field_name(kind, klass, -1)] = amount
        for bucket in range(first, min(first + spread, ms_buckets.COUNT)):
            for kind, name in ((fm.KLASS_RUN, klass), (fm.KLASS_WAIT, klass),
                               (fm.QUEUE_RUN, f"q{number % 5}"), (fm.QUEUE_WAIT, f"q{number % 5}"),
                               (fm.ALL_RUN, ""), (fm.ALL_WAIT, "")):
                field = fm.field_name(kind, name, bucket)
                fields[field] = fields.get(field, 0) + 20
    return fields


def fill_functions(client: Client) -> None:
    """Every slot of the hour, the day and the week filled for `FUNCTIONS` klasses, the
    lifetime totals too."""
    now = time.time()
    fields = function_slot([f"bench.functions.f{number:02d}" for number in range(FUNCTIONS)])
    main = {name: value for name, value in fields.items()
            if name.split(":", 1)[0] in fm.TOTAL_KINDS}
    extra = {name: value for name, value in fields.items() if name not in main}
    for resolution in fm.RESOLUTIONS:
        # Enough slots for the longest range read at this resolution.
        count = max(span.slots for span in (*fm.RANGES.values(), *fm.LIST_RANGES.values())
                    if span.resolution is resolution)
        pipe = client.redis.pipeline(transaction=False)
        for number in fm.slot_numbers(fm.Span(resolution, count), now):
            for key, mapping in ((keys.fn_slot(resolution.name, number), main),
                                 (keys.fn_extra(resolution.name, number), extra)):
                if resolution.extra or mapping is main:
                    pipe.hset(key, mapping=mapping)
                    pipe.expire(key, resolution.keep)
        pipe.execute()
    client.redis.hset(keys.FN_TOTALS, mapping=main)


def page_url(route: str, query: str = "", /, **kwargs: str) -> str:
    """An admin URL of the app on the default connection."""
    return reverse(f"admin:django_qless_{route}", kwargs={"alias": "default", **kwargs}) + query


def pages(jobs: int, bulk_run: str) -> dict[str, str]:
    """Every admin page (and every tab, first and last pages of the long lists) to time;
    `bulk_run` is a bulk run over the big queue, waiting for its confirmation."""
    last = max(1, -(-jobs // 25))
    middle = last // 2
    timed = {
        "overview": page_url("overview"),
        "overview, last 24 hours": page_url("overview", "?range=24h"),
        "overview, last 7 days": page_url("overview", "?range=7d"),
        "queues": page_url("queues"),
        **{f"queue {tab} tab": page_url("queue", f"?tab={tab}", name=QUEUE) for tab in TABS},
        f"waiting, page {middle}": page_url("queue", f"?tab=waiting&page={middle}", name=QUEUE),
        f"waiting, page {last} (last)": page_url("queue", f"?tab=waiting&page={last}", name=QUEUE),
        "job page (waiting)": page_url("job", jid=f"job-{jobs // 2:07d}"),
        "job page (failed)": page_url("job", jid="failed-000000"),
        "job page (depends)": page_url("job", jid="after-0000"),
        "job page (depended on)": page_url("job", jid="later-000000"),
        "search": page_url("search"),
        # A jid prefix nothing has: the walk goes through every set until its time is up.
        "search, nothing found": page_url("search", "?jid_prefix=no-such-job"),
        "search, class over the big queue": page_url("search", f"?{WALK}"),
        "search, look further (mid-queue)": page_url(
            "search", f"?{WALK}&cursor=w1.0.{jobs // 2}.{jobs}.{jobs // 2}"),
        "search, data substring": page_url("search", f"?queue={QUEUE}&data_contains=no-such"),
        "completed": page_url("completed"),
        "tracked": page_url("tracked"),
        "tagged, page 1": page_url("tagged", "?tag=bench"),
        "tagged, last page": page_url("tagged", f"?tag=bench&page={-(-jobs // 250)}"),
        "failures": page_url("failures"),
        "failure group": page_url("failure_group", group="bench.Error0"),
        "workers": page_url("workers"),
        "worker page": page_url("worker", name="worker-000"),
        "recurring list": page_url("recurring_list"),
        "recurring page": page_url("recurring", jid="recur-00"),
        "config": page_url("config"),
        "audit": page_url("audit"),
        **{f"functions ({name})": page_url("functions", f"?range={name}") for name in fm.RANGES},
        "functions (7d, by failures)": page_url("functions", "?range=7d&sort=failures"),
        **{f"function page ({name})": page_url("function", f"?range={name}",
                                              klass="bench.functions.f07")
           for name in fm.RANGES},
        "metrics (Prometheus)": reverse("django_qless:metrics"),
        "bulk runs": page_url("bulk_runs"),
        "bulk choose (big queue, waiting)":
            page_url("bulk_choose", f"?queue={QUEUE}&state=waiting"),
        "bulk run (confirmation)": page_url("bulk_run", run_id=bulk_run),
    }
    live = ("overview", "overview, last 7 days", "queue running tab", "job page (waiting)",
            "failures", "workers", "worker page")
    timed.update({name + LIVE: timed[name] for name in live})
    untimed = {route.name for route in ROUTES if not route.action} - {
        path_name(path) for path in timed.values()}
    if untimed:  # a new page must be added here, so the bench keeps covering every page
        raise SystemExit(f"pages not timed: {', '.join(sorted(untimed))}")
    return timed


def path_name(path: str) -> str:
    """The route name (without the `django_qless_` prefix) an admin path resolves to."""
    name = resolve(path.split("?")[0]).url_name or ""
    return name.removeprefix("django_qless_")


def time_page(client: HttpClient, path: str, repeat: int, *, live: bool = False) -> float:
    """Median seconds to render a page (as its live refresh asks for it, with `live`)."""
    timings = []
    headers = {HEADER: "1"} if live else {}
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(path, headers=headers)
        timings.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"{path}: HTTP {response.status_code}")
    return statistics.median(timings)


def time_panel(client: Client, repeat: int) -> float:
    """Median seconds of the overview's "What is stuck" alone, from the counts it reuses."""
    queues, workers = client.queues(), client.workers.counts()
    waited = latencies(client, [queue.name for queue in queues])
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        panel = stuck.build(client, queues, workers, waited)
        timings.append(time.perf_counter() - started)
    if panel.empty or not panel.blocked.found:
        raise SystemExit("the stuck situations were not found")
    return statistics.median(timings)


def logged_in_client() -> HttpClient:
    """A test client logged in as a superuser (database created in memory)."""
    setup_test_environment()  # lets the test client's host in
    call_command("migrate", verbosity=0, run_syncdb=True)
    user = User.objects.create_superuser("bench")
    client = HttpClient()
    client.force_login(user)
    return client


def post_step(client: HttpClient, route: str, body: dict[str, str]) -> tuple[float, str]:
    """Seconds one bulk POST took, and where it redirected."""
    started = time.perf_counter()
    response = client.post(page_url(route), body)
    seconds = time.perf_counter() - started
    if response.status_code != 302:
        raise SystemExit(f"{route}: HTTP {response.status_code}")
    return seconds, response["Location"]


def bulk_steps(client: HttpClient) -> tuple[str, dict[str, float]]:
    """A bulk run over the big queue's waiting jobs collected to its confirmation (left
    there: nothing is applied to the big queue), and a retry of one failure group of the
    side queue applied for one chunk; (the first run's id, seconds of each step timed)."""
    timed: dict[str, float] = {}
    big = {"action": "priority", "priority": "1", "f_queue": QUEUE, "f_state": "waiting"}
    timed["bulk start + first collect step"], where = post_step(client, "bulk_start", big)
    run_id = where.rstrip("/").rsplit("/", 1)[1]
    steps = [post_step(client, "bulk_step", {"run": run_id})[0] for _ in range(3)]
    timed["bulk collect step (big queue)"] = statistics.median(steps)
    side = {"action": "retry", "f_state": "failed", "f_group": "bench.Error1"}
    _, where = post_step(client, "bulk_start", side)
    side_id = where.rstrip("/").rsplit("/", 1)[1]
    for _ in range(20):  # collected to its confirmation
        post_step(client, "bulk_step", {"run": side_id})
    chunks = [post_step(client, "bulk_step", {"run": side_id, "confirmed": "yes"})[0]
              for _ in range(3)]
    timed[f"bulk apply chunk ({CHUNK} retries)"] = statistics.median(chunks)
    return run_id, timed


def report(lua: LuaScript, client: HttpClient, jobs: int, repeat: int) -> bool:
    """Time every page and print a table; True when all are within budget."""
    lua.client.config_set("slowlog-log-slower-than", SLOW_MICROSECONDS)
    lua.client.slowlog_reset()
    lua.client.config_resetstat()
    ok = True
    print(f"{'page':<34} {'median ms':>10}  under {BUDGET:.0f} s")
    bulk_run, steps = bulk_steps(client)
    for name, seconds in steps.items():
        ok &= seconds < BUDGET
        print(f"{name:<34} {seconds * 1000:>10.1f}  {'yes' if seconds < BUDGET else 'NO'}")
    for name, path in pages(jobs, bulk_run).items():
        seconds = time_page(client, path, repeat, live=name.endswith(LIVE))
        ok &= seconds < BUDGET
        print(f"{name:<34} {seconds * 1000:>10.1f}  {'yes' if seconds < BUDGET else 'NO'}")
    panel = time_panel(Client(lua.client), repeat)
    print(f"{'What is stuck (panel alone)':<34} {panel * 1000:>10.1f}")
    slow: list[Any] = lua.client.slowlog_get(128)
    scans = {"cmdstat_keys", "cmdstat_scan"} & set(lua.client.info("commandstats"))
    worst = max((entry["duration"] for entry in slow), default=0)
    print(f"Redis commands over {SLOW_MICROSECONDS / 1000:.0f} ms: {len(slow)}"
          f" (slowest {worst / 1000:.1f} ms); KEYS/SCAN used: {'yes' if scans else 'no'}")
    for entry in slow[:10]:  # which ones (the command cut short)
        print(f"  {entry['duration'] / 1000:.1f} ms: {str(entry['command'])[:90]}")
    return ok and not slow and not scans


def main() -> int:
    """Parse options, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--side", type=int, default=50_000,
                        help="failed, completed and scheduled jobs beside the big queue")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--redis-server", default=None)
    options = parser.parse_args()
    server = RedisServer(binary=options.redis_server or find_redis_server()).start()
    try:
        lua = LuaScript(server.client(decode_responses=True))
        with override_settings(QLESS={"URL": server.url}):
            print(f"filled {options.jobs:,} waiting jobs in {fill(lua, options.jobs):.1f} s "
                  f"(redis-server {'.'.join(map(str, server.version))})")
            started = time.perf_counter()
            fill_the_rest(lua, options.side)
            fill_stuck(lua, options.side)
            fill_live_hour(Client(lua.client))
            fill_live_week(Client(lua.client))
            fill_functions(Client(lua.client))
            print(f"and {options.side:,} failed, completed and scheduled jobs each, "
                  f"{WORKERS} workers, 50 recurring templates, the stuck situations, a week "
                  f"of {FUNCTIONS} job functions in "
                  f"{time.perf_counter() - started:.1f} s")
            ok = report(lua, logged_in_client(), options.jobs, options.repeat)
    finally:
        server.stop()
    print("all pages within budget" if ok else "SOME PAGES OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
