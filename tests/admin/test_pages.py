"""What the pages show: counts, tabs, leases, history, masking, search, connections."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.test import Client as HttpClient

from django_qless.admin import charts, stats_charts
from django_qless.connection import get_client
from django_qless.core import Client, ms_buckets
from tests.admin.conftest import KLASS, World, logged_in, messages_of, url
from tests.conftest import LuaScript


def text(response: Any) -> str:
    """A page's HTML."""
    assert response.status_code == 200
    return str(response.content.decode())


def test_overview_shows_queues_failures_workers_and_tracked(
    world: World, qless: Client, viewer: HttpClient
) -> None:
    qless.queue("busy").pause()
    response = viewer.get(url("overview"))
    counts = {q.name: q for q in response.context["queues"]}
    assert (counts["jobs"].waiting, counts["jobs"].scheduled, counts["jobs"].depends,
            counts["jobs"].recurring) == (2, 1, 1, 1)
    assert counts["busy"].running == 1 and counts["busy"].paused
    assert response.context["groups"] == [("broken-ValueError", 1)]
    assert [(w.name, w.jobs) for w in response.context["workers"]] == [(world.worker, 1)]
    assert response.context["tracked"]["waiting"] == 1
    page = text(response)
    assert "paused" in page and url("failure_group", group="broken-ValueError") in page


def test_queue_tabs_list_their_jobs(world: World, viewer: HttpClient) -> None:
    expected = {"waiting": [world.parent, world.waiting], "scheduled": [world.scheduled],
                "depends": [world.child], "recurring": [world.recurring]}
    for tab, jids in expected.items():
        response = viewer.get(url("queue", name="jobs") + f"?tab={tab}")
        items = response.context["tab_context"]["page"].items
        assert [row.job.jid for row in items] == jids, tab
    running = viewer.get(url("queue", name="busy") + "?tab=running")
    [row] = running.context["tab_context"]["page"].items
    assert row.job.jid == world.running and 55 < row.lease_left <= 60
    assert re.search(r"expires in (5\d|60) s", text(running))


def test_a_queue_opens_on_its_first_tab_with_jobs(
    world: World, qless: Client, viewer: HttpClient
) -> None:
    opened = {name: viewer.get(url("queue", name=name)).context["tab"]
              for name in ("busy", "jobs")}
    assert opened == {"busy": "running", "jobs": "waiting"}
    qless.queue("empty").put(KLASS, {})
    qless.existing_queue("empty").pop()[0].complete()
    assert viewer.get(url("queue", name="empty")).context["tab"] == "stats"
    # An explicit tab still wins.
    assert viewer.get(url("queue", name="jobs") + "?tab=stats").context["tab"] == "stats"


def test_stalled_tab_shows_expired_leases(lua: LuaScript, viewer: HttpClient, qless: Any) -> None:
    past = time.time() - 3600
    lua("put", past, "w", "slow", "late", KLASS, "{}", 0)
    lua("pop", past, "slow", "old-worker", 1)
    response = viewer.get(url("queue", name="slow") + "?tab=stalled")
    [row] = response.context["tab_context"]["page"].items
    assert row.job.jid == "late" and row.lease_left < -3000
    assert "expired 59 min" in text(response)
    assert response.context["queue"].stalled == 1


def test_waiting_tab_paginates_in_pop_order(qless: Client, viewer: HttpClient) -> None:
    jids = [qless.queue("many").put(KLASS, {}, priority=i % 3) for i in range(60)]
    order = qless.queue("many").waiting(0, 60)
    pages = []
    for number in (1, 2, 3, 4):
        response = viewer.get(url("queue", name="many") + f"?tab=waiting&page={number}")
        page = response.context["tab_context"]["page"]
        pages.append([row.job.jid for row in page.items])
        assert page.total == 60 and page.num_pages == 3
    assert pages[0] + pages[1] + pages[2] == order and pages[3] == []
    assert sorted(order) == sorted(jids)
    second = text(viewer.get(url("queue", name="many") + "?tab=waiting&page=2"))
    assert "page=1" in second and "page=3" in second


@pytest.mark.parametrize("page", ["0", "-3", "abc", "99999999999999"])
def test_odd_page_numbers_are_clamped(page: str, world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("queue", name="jobs") + f"?tab=waiting&page={page}")
    assert response.status_code == 200


def test_stats_tab_draws_the_histograms(lua: LuaScript, viewer: HttpClient, qless: Any) -> None:
    now = time.time()
    lua("put", now - 5.5, "w", "timed", "a", KLASS, "{}", 0)
    lua("pop", now, "timed", "w1", 1)
    lua("complete", now + 2.2, "a", "w1", "timed", "{}")
    response = viewer.get(url("queue", name="timed") + "?tab=stats")
    page = text(response)
    assert "<svg" in page and "1 job: 5–6 s" in page and "1 job: 2–3 s" in page
    assert response.context["stats"].wait.count == 1
    wait = response.context["tab_context"]["wait"]
    # One bar per second of qless's buckets, from 0 s, at least ten of them.
    assert wait.peak == 1 and [bar.label for bar in wait.bars][:2] == ["0–1 s", "1–2 s"]
    assert len(wait.bars) == 10 and [tick.label for tick in wait.y_ticks] == ["0", "1"]
    assert "1 in 5–6 s" in page and "1 in 2–3 s" in page  # counts, written out
    assert "Wait time" in page and "Run time" in page
    assert "every job under a second is in the 0&ndash;1 s bar" in page


def test_stats_of_another_day(world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("queue", name="jobs") + "?tab=stats&date=2001-02-03")
    assert response.context["day"].date().isoformat() == "2001-02-03"
    page = text(response)
    assert page.count("No jobs on this day.") == 2 and "qless-histogram" not in page


def test_job_page_shows_history_failure_and_links(
    world: World, viewer: HttpClient, operator: HttpClient
) -> None:
    assert "Traceback\nValueError: boom" in text(operator.get(url("job", jid=world.failed)))
    page = text(viewer.get(url("job", jid=world.failed)))
    # Without view_job_data the failure's text is hidden; its group, worker and time stay.
    assert "ValueError: boom" not in page and "Message and traceback hidden" in page
    events = re.findall(r'<span class="qless-what">([^<]+)</span>', page)
    assert events == ["failed", "popped", "put"]
    assert url("failure_group", group=world.group) in page
    assert url("worker", name=world.worker) in page
    child = text(viewer.get(url("job", jid=world.child)))
    assert url("job", jid=world.parent) in child
    parent = text(viewer.get(url("job", jid=world.parent)))
    assert url("job", jid=world.child) in parent


def test_job_page_data_needs_permission_and_masks_secrets(
    world: World, viewer: HttpClient, operator: HttpClient
) -> None:
    hidden = text(viewer.get(url("job", jid=world.waiting)))
    assert "Hidden: seeing job data needs" in hidden and "args" not in hidden
    shown = text(operator.get(url("job", jid=world.waiting)))
    assert "hunter2" not in shown and "&quot;password&quot;: &quot;********&quot;" in shown
    recurring = text(operator.get(url("recurring", jid=world.recurring)))
    assert "t0ps3cret" not in recurring and "********" in recurring


def test_masked_keys_come_from_the_setting(
    qless: Client, operator: HttpClient, settings: Any
) -> None:
    settings.QLESS = {**settings.QLESS, "ADMIN": {"MASKED_DATA_KEYS": ["card"]}}
    jid = get_client().queue("q").put(KLASS, {"Card_Number": "4111", "password": "visible",
                                              "nested": [{"card": "x"}]})
    page = text(operator.get(url("job", jid=jid)))
    assert "4111" not in page and "visible" in page and "&quot;x&quot;" not in page


def test_history_entries_from_log_are_masked(qless: Client, operator: HttpClient) -> None:
    jid = qless.queue("q").put(KLASS, {})
    qless.get_job(jid).log("progress", {"step": 3, "api_token": "abc123"})  # type: ignore[union-attr]
    page = text(operator.get(url("job", jid=jid)))
    assert "progress" in page and "step:" in page and "abc123" not in page


def test_missing_job_is_a_404_page(world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("job", jid="nope"))
    assert response.status_code == 404 and b"No job" in response.content


@pytest.mark.parametrize(
    ("query", "target"),
    [("failed", "job"), ("every-minute", "recurring"), ("red", "search by tag")],
)
def test_search_finds_jobs_recurring_jobs_and_tags(
    query: str, target: str, world: World, viewer: HttpClient
) -> None:
    value = world.failed if query == "failed" else query
    response = viewer.get(url("search") + f"?q={value}")
    assert response.status_code == 302
    expected = {"job": url("job", jid=world.failed), "recurring": url("recurring", jid=value),
                "search by tag": url("search") + "?tag=red"}[target]
    assert response["Location"] == expected


def test_search_for_nothing(world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("search") + "?q=nothing-here")
    assert response["Location"] == url("search") + "?jid_prefix=nothing-here"
    found = viewer.get(response["Location"])
    assert found.context["page"].items == [] and found.context["walk"].done


def test_tagged_page_lists_jobs_with_the_tag(world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("tagged") + "?tag=red")
    rows = response.context["page"].items
    assert {row.job.jid for row in rows} == {world.waiting, world.scheduled, world.failed}
    assert response.context["total"] == 3


def test_tracked_tabs(world: World, qless: Client, viewer: HttpClient) -> None:
    qless.track(world.failed)
    qless.track(world.complete)
    qless.cancel(world.scheduled)  # never tracked: must not show
    response = viewer.get(url("tracked"))
    assert {r.job.jid for r in response.context["page"].items} == {
        world.waiting, world.failed, world.complete}
    failed = viewer.get(url("tracked") + "?state=failed")
    assert [r.job.jid for r in failed.context["page"].items] == [world.failed]
    qless.cancel(world.waiting)
    gone = viewer.get(url("tracked") + "?state=gone")
    assert list(gone.context["gone"]) == [world.waiting]


def test_completed_workers_and_config_pages(world: World, viewer: HttpClient) -> None:
    completed = viewer.get(url("completed"))
    assert [r.job.jid for r in completed.context["page"].items] == [world.complete]
    assert completed.context["page"].total is None
    worker = viewer.get(url("worker", name=world.worker))
    assert [r.job.jid for r in worker.context["page"].items] == [world.running]
    config = {row.key: row.value for row in viewer.get(url("config")).context["rows"]}
    assert (config["heartbeat"], config["application"]) == ("60", "qless")


def test_view_only_users_see_no_action_buttons(world: World, viewer: HttpClient) -> None:
    page = text(viewer.get(url("job", jid=world.failed)))
    assert "formaction" not in page and 'method="post"' not in page.split("qless-search")[1]


def test_connection_switcher_keeps_the_page(
    world: World, qless: Client, viewer: HttpClient
) -> None:
    other = get_client("other")
    other.queue("remote-queue").put(KLASS, {})
    page = text(viewer.get(url("queues")))
    assert f'href="{url("queues", alias="other")}"' in page
    remote = viewer.get(url("queues", alias="other"))
    assert [q.name for q in remote.context["queues"]] == ["remote-queue"]
    changelist = text(viewer.get("/admin/django_qless/failure/"))
    assert f'href="{url("failures", alias="other")}"' in changelist


def test_pages_never_scan_the_keyspace(
    world: World, redis_client: redis.Redis, operator: HttpClient
) -> None:
    """E8: no KEYS or SCAN from any page; lists are read with ranges."""
    redis_client.config_resetstat()
    paths = [url(name) for name in ("overview", "queues", "failures", "completed", "tracked",
                                    "workers", "recurring_list", "config", "search")]
    paths += [url("queue", name="jobs") + f"?tab={tab}" for tab in
              ("stats", "running", "waiting", "scheduled", "stalled", "depends", "recurring")]
    paths += [url("job", jid=world.failed), url("failure_group", group=world.group),
              url("worker", name=world.worker), url("recurring", jid=world.recurring),
              url("tagged") + "?tag=red"]
    for path in paths:
        assert operator.get(path).status_code == 200, path
    stats = redis_client.info("commandstats")
    assert stats.get("cmdstat_evalsha", {}).get("calls", 0) > len(paths)
    assert not {"cmdstat_keys", "cmdstat_scan"} & set(stats)


def test_admin_index_and_app_index(world: World, make_user: Callable[..., User]) -> None:
    client = logged_in(make_user("v", perms=("view_qless",)))
    index = text(client.get("/admin/"))
    # Django 6 dropped the link's title attribute: match the app's section link either way.
    assert re.search(r'<a href="/admin/django_qless/" class="section"[^>]*>Qless</a>', index)
    for label in ("Overview", "Queues", "Jobs", "Failed jobs", "Workers", "Recurring jobs"):
        assert f">{label}</a>" in index


def test_unreachable_redis_gives_an_error_page(viewer: HttpClient, settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    response = viewer.get(url("overview"))
    assert response.status_code == 503
    assert b"Redis error on connection &#x27;default&#x27;" in response.content


def test_foreign_queue_and_worker_names_render(lua: LuaScript, viewer: HttpClient,
                                               qless: Any) -> None:
    """Names another qless client may use (spaces, slashes) still get their pages."""
    now = time.time()
    lua("put", now, "w", "odd queue/name", "odd jid", KLASS, "{}", 0)
    lua("put", now, "w", "odd queue/name", "held", KLASS, "{}", 0)
    lua("pop", now, "odd queue/name", "worker with spaces", 1)
    queue = viewer.get(url("queue", name="odd queue/name") + "?tab=waiting")
    assert [r.job.jid for r in queue.context["tab_context"]["page"].items] == ["held"]
    assert viewer.get(url("job", jid="odd jid")).context["job"].state == "running"
    worker = viewer.get(url("worker", name="worker with spaces"))
    assert [r.job.jid for r in worker.context["page"].items] == ["odd jid"]


def test_scheduled_jobs_and_recurring_templates_show_when_they_run(
    world: World, qless: Client, viewer: HttpClient
) -> None:
    scheduled = viewer.get(url("queue", name="jobs") + "?tab=scheduled")
    [row] = scheduled.context["tab_context"]["page"].items
    assert row.job.jid == world.scheduled and 3590 < row.runs_in <= 3600
    shown = r"runs <time[^>]*>[\d-]+ [\d:]+</time> <span[^>]*>\(in (59 min|1 h)"
    assert re.search(shown, text(scheduled))
    job_page = text(viewer.get(url("job", jid=world.scheduled)))
    assert "<dt>Runs</dt>" in job_page
    waiting_page = text(viewer.get(url("job", jid=world.waiting)))
    assert "<dt>Runs</dt>" not in waiting_page
    recurring = viewer.get(url("queue", name="jobs") + "?tab=recurring")
    [template] = recurring.context["tab_context"]["page"].items
    assert template.next_run is not None and -5 <= template.next_in <= 60  # due at once
    assert "Next run" in text(recurring)


def test_config_shows_units_meanings_and_defaults(qless: Client, operator: HttpClient) -> None:
    qless.config.set("jobs-history", 86400)
    qless.config.set("mail-heartbeat", 30)
    response = operator.get(url("config"))
    rows = {row.key: row for row in response.context["rows"]}
    assert (rows["heartbeat"].unit, rows["heartbeat"].stored) == ("seconds", False)
    assert "Lease" in rows["heartbeat"].text
    assert (rows["jobs-history"].readable, rows["jobs-history"].stored) == ("1 d", True)
    assert rows["mail-heartbeat"].unit == "seconds" and rows["mail-heartbeat"].stored
    page = text(response)
    assert page.count("Unset</button>") == 2  # only the stored values can be unset
    refused = operator.post(url("config_unset"), {"key": "heartbeat"}, follow=True)
    assert "heartbeat is not set: it already has its default value." in messages_of(refused)


def test_job_page_draws_its_dependencies_both_ways_with_states(
    world: World, qless: Client, viewer: HttpClient
) -> None:
    grandchild = qless.queue("jobs").put(KLASS, {}, depends=[world.child])
    response = viewer.get(url("job", jid=world.child))
    graph = response.context["graph"]
    assert [(n.jid, n.state) for n in graph.waits_for] == [(world.parent, "waiting")]
    assert [(n.jid, n.state) for n in graph.needed_by] == [(grandchild, "depends")]
    assert graph.job.state == "depends"
    page = text(response)
    assert 'aria-label="Jobs this job waits for"' in page and "qless-graph-this" in page
    qless.cancel(world.child, grandchild)  # the parent's dependent is gone now
    assert viewer.get(url("job", jid=world.parent)).context["graph"] is None
    assert "qless-graph-body" not in text(viewer.get(url("job", jid=world.parent)))


def test_millisecond_histograms_are_drawn_above_qless_second_ones() -> None:
    counts = [0] * ms_buckets.COUNT
    counts[ms_buckets.bucket_of(138)] = 2254
    counts[ms_buckets.bucket_of(160)] = 40
    qless_seconds = stats_charts.qless_histogram("Run time by whole second", [2294] + [0] * 147)
    page = render_to_string("admin/django_qless/_histogram.html", {
        "caption": "Run time", "what": "run times", "chart_id": "qless-run",
        "timing": {"count": 2294, "mean": 0.138, "std": 0.01}, "chart": qless_seconds,
        "ms_chart": charts.ms_histogram("Run time in milliseconds", counts),
    })
    ms_part, seconds_part = page.split("In whole seconds, as qless records them")
    # The jobs of a 138 ms mean fall in their own bars rather than one "0-1 s" bar.
    assert "<title>2254 jobs: 100\u2013150 ms</title>" in ms_part
    assert "<title>40 jobs: 150\u2013200 ms</title>" in ms_part
    assert 'id="qless-run-ms-summary"' in ms_part
    assert "<title>2294 jobs: 0\u20131 s</title>" in seconds_part


def test_stats_tab_draws_the_recorded_millisecond_histograms(
    viewer: HttpClient, qless: Any
) -> None:
    from django_qless.core import fn_metrics
    from django_qless.worker.fn_tally import FunctionTally

    before = viewer.get(url("queue", name="timed") + "?tab=stats").context["tab_context"]
    assert "run_ms" not in before and "wait_ms" not in before  # nothing recorded yet
    tally = FunctionTally()
    for _ in range(3):
        tally.count(KLASS, "timed", "completed", 0.138, 0.004)
    tally.count(KLASS, "other", "completed", 5.0, 1.0)
    pipe = qless.redis.pipeline()
    fn_metrics.add_functions(pipe, tally.take(), qless.now())
    pipe.execute()
    response = viewer.get(url("queue", name="timed") + "?tab=stats")
    run_ms = response.context["tab_context"]["run_ms"]
    assert [(bar.label, bar.count) for bar in run_ms.bars] == [("100\u2013150 ms", 3)]
    assert "In milliseconds over the last 24 hours" in text(response)
