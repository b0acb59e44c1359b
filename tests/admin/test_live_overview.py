"""The overview's last hour (throughput, failure rate, depth, by queue) and the live refreshes
of the pages: same view, same permission checks, never cached, messages left alone."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.admin import live_overview
from django_qless.core import Client, keys, ms_buckets
from django_qless.core.deploys import mark_deploy
from django_qless.core.live import MINUTES, add_throughput, minute_of, read_history
from tests.admin.conftest import ALL_PERMS, World, logged_in, url

LIVE = {"X-Qless-Live": "1"}
#: Each live page, by route and URL arguments (the worker's name is the world's).
LIVE_PAGES = [("overview", {}), ("queue", {"name": "jobs"}), ("workers", {}),
              ("failures", {}), ("worker", {"name": "worker"}), ("job", {"jid": "running"})]


@pytest.fixture(autouse=True)
def within_one_minute(qless: Client) -> None:
    """Start a test at least 15 s before the minute turns: the overview's "last minute" is
    the minute before the page's, so a test writing it and reading the page must not
    cross into the next one."""
    into_minute = qless.now() % 60
    if into_minute > 45:
        time.sleep(60.5 - into_minute)


def finished(qless: Client, counts: dict[tuple[str, str], int], minutes_ago: int = 0) -> None:
    """Add throughput as workers do, `minutes_ago` minutes back."""
    pipe = qless.redis.pipeline()
    add_throughput(pipe, Counter(counts), qless.now() - 60 * minutes_ago)
    pipe.execute()


def live_url(route: str, world: World, **kwargs: str) -> str:
    """A live page's URL, arguments naming the world's own things."""
    names = {"worker": world.worker, "running": world.running}
    return url(route, **{key: names.get(value, value) for key, value in kwargs.items()})


def test_without_data_the_charts_say_so(viewer: HttpClient) -> None:
    page = viewer.get(url("overview")).content.decode()
    assert "No job finished in the last hour by a qless_worker process." in page
    assert "No depth sample yet" in page  # no queue at all
    assert 'role="img"' not in page


def test_throughput_and_failure_rate_are_drawn_with_totals(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 8, ("mail", "failed"): 2}, minutes_ago=1)
    finished(qless, {("mail", "completed"): 3, ("mail", "retried"): 1,
                     ("video", "completed"): 5}, minutes_ago=0)
    page = viewer.get(url("overview")).content.decode()
    assert 'aria-label="Jobs finished per minute over the last hour, all queues"' in page
    assert 'aria-label="Failure rate per minute over the last hour, all queues"' in page
    assert re.search(r"<title>\d\d:\d\d \(so far\): 8 completed</title>", page)
    assert re.search(r"<title>\d\d:\d\d: 2 failed</title>", page)
    assert "Last hour: 16 completed, 2 failed, 1 retried" in page
    assert 'data-qless-stat="this-minute">9<' in page
    assert "15.8%" in page  # 3 of 19 failed or retried
    # By queue: the busiest first, each with a sparkline and its own failure rate.
    rows = re.findall(r'<tr[^>]*>\s*<th scope="row"><a [^>]*>(\w+)</a>', page.split(
        "Throughput by queue")[1].split("</table>")[0])
    assert rows == ["mail", "video"]
    assert 'aria-label="14 jobs finished in the last hour, at most 10 in one minute"' in page
    assert "21.4%" in page  # mail: 3 of 14


def test_the_average_run_time_is_drawn_per_minute_and_per_queue(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 4, ("mail", "ms"): 2000}, minutes_ago=2)
    finished(qless, {("mail", "completed"): 1, ("mail", "ms"): 100}, minutes_ago=1)
    page = viewer.get(url("overview")).content.decode()
    assert 'aria-label="Average run time of the jobs finished each minute' in page
    run_chart = page.split('id="qless-run-time-summary"')[0].rsplit("<svg", 1)[1]
    assert ">500 ms<" in run_chart and "qless-series-run" in run_chart  # axis up to 500 ms
    assert ">420 ms<" in page  # mail: 2,100 ms over 5 jobs


def test_a_queue_can_be_chosen_and_an_unknown_one_is_ignored(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 4, ("video", "failed"): 6})
    page = viewer.get(url("overview"), {"queue": "mail"}).content.decode()
    assert "Last hour: queue mail" in page and "Last hour: 4 completed, 0 failed" in page
    assert "over the last hour, queue mail" in page
    other = viewer.get(url("overview"), {"queue": "nope"}).content.decode()
    assert "Last hour: all queues" in other
    qless.queue("mail").put("app.jobs.send", {})
    queue_page = viewer.get(url("queue", name="mail")).content.decode()
    assert f'href="{url("overview")}?queue=mail">Throughput, last hour</a>' in queue_page


def test_the_page_takes_the_depth_sample_a_worker_did_not(
    qless: Client, viewer: HttpClient, world: World
) -> None:
    page = viewer.get(url("overview")).content.decode()
    sample = qless.redis.get(keys.depth(minute_of(qless.now())))
    assert sample is not None and b'"jobs":[' in sample
    assert 'aria-label="Jobs in each state, sampled once a minute over the last hour' in page
    assert re.search(r"Sampled once a minute; at \d\d:\d\d: \d+ waiting, 1 scheduled, "
                     r"1 running, 0 stalled, 1 depends\.", page)


def test_a_live_refresh_is_the_page_and_never_cached(world: World, viewer: HttpClient) -> None:
    for route, kwargs in LIVE_PAGES:
        response = viewer.get(live_url(route, world, **kwargs), headers=LIVE)
        assert response.status_code == 200, route
        assert '<div id="qless-live" data-qless-live>' in response.content.decode(), route
        assert "no-store" in response["Cache-Control"], route
        assert "X-Qless-Live" in response["Vary"], route


def test_a_completed_job_page_does_not_refresh(world: World, viewer: HttpClient) -> None:
    page = viewer.get(url("job", jid=world.complete)).content.decode()
    assert '<div id="qless-live">' in page and "data-qless-live" not in page


def test_every_page_loads_the_script_and_its_styles(world: World, viewer: HttpClient) -> None:
    page = viewer.get(url("queues")).content.decode()
    assert "django_qless/live.js" in page and "django_qless/live.css" in page


def test_a_live_refresh_leaves_pending_messages_for_the_next_page(
    world: World, operator: HttpClient
) -> None:
    operator.post(url("queue_pause"), {"queue": "jobs"})
    live = operator.get(url("overview"), headers=LIVE)
    assert [str(message) for message in live.context["messages"]]  # rendered, but kept
    page = operator.get(url("overview"))
    assert any("aused" in str(message) for message in page.context["messages"])


@pytest.mark.parametrize(("user", "status"), [
    ("anonymous", 302), ("non-staff", 302), ("staff without permissions", 403),
])
def test_live_refreshes_are_refused_as_the_pages_are(
    user: str, status: int, world: World, make_user: Callable[..., User]
) -> None:
    options: dict[str, dict[str, Any]] = {
        "non-staff": {"staff": False, "perms": ALL_PERMS}, "staff without permissions": {},
    }
    account = make_user("u", **options[user]) if user in options else None
    client = logged_in(account)
    for route, kwargs in LIVE_PAGES:
        response = client.get(live_url(route, world, **kwargs), headers=LIVE)
        assert response.status_code == status, route
        assert b"qless-live" not in response.content, route


def test_the_last_minute_counts_retries_apart_from_failures(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 6, ("mail", "retried"): 4}, minutes_ago=1)
    page = viewer.get(url("overview")).content.decode()
    last = page.split("<dt>Last minute</dt>")[1].split("</dd>")[0]
    assert '<span class="qless-stat" data-qless-stat="last-failed">0</span> failed' in last
    assert 'data-qless-stat="last-retried">4</span> retried' in last
    assert "qless-warn" not in last  # nothing failed for good: nothing in red

    finished(qless, {("mail", "failed"): 2}, minutes_ago=1)
    last = viewer.get(url("overview")).content.decode().split(
        "<dt>Last minute</dt>")[1].split("</dd>")[0]
    assert 'qless-warn" data-qless-stat="last-failed">2</span> failed' in last
    assert 'data-qless-stat="last-retried">4</span> retried' in last


@pytest.mark.parametrize(("span", "slots", "per", "words"), [
    ("1h", 60, "per minute", "last hour"),
    ("24h", 96, "per 15 minutes", "last 24 hours"),
    ("7d", 168, "per hour", "last 7 days"),
])
def test_each_range_draws_its_slots_with_time_labels(
    span: str, slots: int, per: str, words: str, qless: Client, viewer: HttpClient
) -> None:
    # One job finished in every slot of the range (the coarser ones hold several minutes).
    seconds = {"1h": 60, "24h": 900, "7d": 3600}[span]
    for back in range(slots):
        finished(qless, {("mail", "completed"): 1}, minutes_ago=back * seconds // 60)
    response = viewer.get(url("overview"), {"range": span})
    live = response.context["live"]
    assert live.span.name == span and len(live.throughput.rects) == slots
    page = response.content.decode()
    assert f'aria-label="Jobs finished {per} over the {words}, all queues"' in page
    assert f"<h2 id=\"qless-live-title\">{words.capitalize()}: all queues</h2>" in page
    labels = [tick.label for tick in live.throughput.x_ticks]
    # Clock times on the hour and the day, days of the week on the week.
    pattern = r"\w{3} \d\d" if span == "7d" else r"\d\d:\d\d"
    assert len(labels) >= 4 and all(re.fullmatch(pattern, label) for label in labels)
    assert f'<a href="?range={span}" aria-current="page">{words.capitalize()}</a>' in page
    assert live.throughput.y_title == f"jobs {per}"
    assert live.run_time.y_title == "average run time, ms"


def test_an_unknown_range_shows_the_hour(viewer: HttpClient) -> None:
    response = viewer.get(url("overview"), {"range": "1y"})
    assert response.status_code == 200 and response.context["live"].span.name == "1h"


def test_the_range_is_kept_with_the_queue_and_by_the_live_refresh(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 4})
    page = viewer.get(url("overview"), {"range": "7d", "queue": "mail"}).content.decode()
    assert "Last 7 days: queue mail" in page
    assert '<a href="?range=24h&amp;queue=mail">Last 24 hours</a>' in page
    assert '<a href="?range=7d">Show all queues</a>' in page
    everything = viewer.get(url("overview"), {"range": "24h"}).content.decode()
    assert 'href="?range=24h&amp;queue=mail" aria-label="Charts of queue mail"' in everything
    # live.js asks for the page's own URL again: the refresh answers for the same range.
    live = viewer.get(url("overview") + "?range=7d", headers=LIVE)
    assert live.context["live"].span.name == "7d"
    assert "Jobs finished per hour over the last 7 days" in live.content.decode()


def test_deploys_are_marked_on_every_chart_with_a_text_alternative(
    qless: Client, viewer: HttpClient
) -> None:
    finished(qless, {("mail", "completed"): 4}, minutes_ago=2)
    now = qless.now()
    mark_deploy(qless.redis, "v42 <b>", now - 30 * 60)
    mark_deploy(qless.redis, "too old for the hour", now - 2 * 3600)
    response = viewer.get(url("overview"))
    live = response.context["live"]
    for chart in (live.throughput, live.failure_rate, live.run_time, live.depth):
        (marker,) = chart.markers
        assert marker.name == "v42 <b>"
    page = response.content.decode()
    assert page.count("<title>Deploy: v42 &lt;b&gt;</title>") == 3  # depth has no sample yet
    assert "Deploys marked: v42 &lt;b&gt;." in page and "too old" not in page
    week = viewer.get(url("overview"), {"range": "7d"}).context["live"]
    assert [marker.name for marker in week.throughput.markers] == [
        "too old for the hour", "v42 <b>"]


def test_the_run_time_chart_takes_percentiles_once_histograms_are_recorded(
    qless: Client
) -> None:
    history = read_history(qless, qless.now())
    counts = [0] * ms_buckets.COUNT
    counts[ms_buckets.bucket_of(120)] = 10
    live = live_overview.build(history, [], None,
                               run_histograms=[None] * (MINUTES - 1) + [counts])
    assert live.percentiles and live.run_time_caption == "Run time, p50 / p95 / p99"
    assert [line.css for line in live.run_time.lines] == [
        "qless-series-p50", "qless-series-p95", "qless-series-p99"]
    assert all(len(line.dots) == 1 for line in live.run_time.lines)  # the one known slot


def test_recorded_histograms_draw_run_and_wait_percentiles(
    qless: Client, viewer: HttpClient
) -> None:
    from django_qless.core import fn_metrics
    from django_qless.worker.fn_tally import FunctionTally

    average = viewer.get(url("overview")).context["live"]
    assert not average.percentiles and average.wait_time is None  # nothing recorded yet
    tally = FunctionTally()
    tally.count("app.mail", "jobs", "completed", 0.120, 0.030)
    pipe = qless.redis.pipeline()
    fn_metrics.add_functions(pipe, tally.take(), qless.now())
    pipe.execute()
    response = viewer.get(url("overview"))
    live = response.context["live"]
    assert live.percentiles and live.wait_time is not None
    assert [line.css for line in live.wait_time.lines] == [
        "qless-series-p50", "qless-series-p95", "qless-series-p99"]
    assert 'id="qless-wait-time-summary"' in response.content.decode()
    other = viewer.get(url("overview"), {"queue": "jobs"}).context["live"]
    assert other.percentiles and other.wait_time is not None
