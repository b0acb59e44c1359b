"""The operator's console in a real browser: what a newcomer hit, workers, metrics, graphs.

Each test walks one part of the admin as an operator would (Debian's chromium driven by
Playwright) and asserts what the page shows and what a click does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client
from django_qless.core.presence import Presence, RunningJob, publish
from tests.admin import test_browser
from tests.admin.conftest import ALL_PERMS, KLASS, plant, url
from tests.admin.test_browser import CHROMIUM, log_in

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]

DATA = {"args": [1, 2], "kwargs": {}}

#: The Chromium page fixture of the main browser test, shared.
browser_page = test_browser.browser_page


def open_as_operator(page: Any, base: str, make_user: Callable[..., User]) -> None:
    """Log in a user holding every permission of the app."""
    make_user("ops", perms=ALL_PERMS)
    log_in(page, base)


def chain_of_three(qless: Client) -> tuple[str, str, str]:
    """Three jobs of queue `pipeline`, each depending on the one before: their jids."""
    queue = qless.queue("pipeline")
    render = queue.put(KLASS, DATA)
    send = queue.put(KLASS, DATA, depends=[render])
    return render, send, queue.put(KLASS, DATA, depends=[send])


def button_labels(page: Any) -> set[str]:
    """The labels of the job page's action buttons."""
    return {label.strip() for label in page.locator(".qless-actions button").all_inner_texts()}


def test_cancelling_a_job_others_depend_on_lists_them_and_cancels_them_all(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    render, send, archive = chain_of_three(qless)
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("job", jid=render))
    page.get_by_role("button", name="Cancel…").click()
    dependents = page.locator(".qless-confirm-dependents li").all_inner_texts()
    assert sorted(dependents) == sorted([send, archive])  # transitively, by jid
    page.get_by_role("button", name="Yes, cancel all 3").click()
    assert "Traceback" not in page.content() and "ERR " not in page.content()
    assert "Cancelled" in page.locator(".messagelist").inner_text()
    assert [qless.get_job(jid) for jid in (render, send, archive)] == [None, None, None]


def test_actions_follow_the_state_of_the_job(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    world = plant(qless)
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("job", jid=world.complete))
    completed = button_labels(page)
    assert not completed & {"Retry", "Time out", "Cancel…"}
    page.goto(base + url("job", jid=world.failed))
    assert "Retry" in button_labels(page)
    page.goto(base + url("job", jid=world.running))
    assert {"Time out", "Cancel…"} <= button_labels(page)


def test_a_scheduled_job_shows_when_it_runs_and_a_recurring_one_its_next_run(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    queue = qless.queue("later")
    queue.put(KLASS, DATA, delay=7200)
    queue.recur(KLASS, DATA, 3600, offset=1800, jid="hourly")
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("queue", name="later"))  # opens on its first non-empty tab
    current = page.locator(".qless-tabs [aria-current=page]").inner_text()
    assert current.lower().startswith("scheduled")
    runs_at = page.locator(".qless-runs-at time").first
    runs = time.mktime(time.strptime(runs_at.get_attribute("datetime")[:19], "%Y-%m-%dT%H:%M:%S"))
    assert runs > time.mktime(time.gmtime()) + 3600  # about two hours ahead, not the put time
    assert re.search(r"\(in 1 h 5\d min\)", page.locator(".qless-runs-at").first.inner_text())
    page.goto(base + url("queue", name="later") + "?tab=recurring")
    next_run = page.locator("tr", has=page.get_by_role("link", name="hourly"))
    assert re.search(r"\(in (29|30) min", next_run.inner_text())


def test_histograms_say_no_jobs_instead_of_drawing_empty_charts(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    qless.queue("quiet").put(KLASS, DATA, delay=60)
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("queue", name="quiet") + "?tab=stats")
    charts = page.locator("figure.qless-chart")
    assert charts.count() >= 2
    assert page.locator("figure.qless-chart .qless-empty").count() == charts.count()
    assert page.locator("svg.qless-histogram").count() == 0


def test_the_config_page_explains_values_and_only_unsets_stored_ones(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    qless.config.set("heartbeat", 120)
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("config"))
    heartbeat = page.locator("tr", has=page.locator("th", has_text="heartbeat")).first
    assert "seconds" in heartbeat.inner_text()
    unset_buttons = page.get_by_role("button", name="Unset")
    assert unset_buttons.count() == 1  # only the stored key; defaults cannot be unset
    unset_buttons.click()
    assert qless.config.overridden() == set()


def test_the_workers_page_flags_silent_workers_and_forgets_only_those(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    now = qless.now()
    job = qless.queue("busy").put(KLASS, DATA)
    Client(qless.redis, worker_name="web-1-100-live").queue("busy").pop()  # runs it now
    for name, ttl in (("web-1-100-live", 60.0), ("web-2-200-gone", 0.2)):
        publish(qless, Presence(
            name=name, host=name[:5], pid=int(name.split("-")[2]), version="0.1.0",
            queues=("busy",), started=now - 600, seen=now, done=42, failed=3,
            rss_bytes=64 << 20, running=(RunningJob(job, KLASS, now - 5),),
        ), ttl=ttl)
    time.sleep(0.5)  # the second presence expires: that worker stopped reporting
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("workers"))
    live = page.locator("tr", has=page.get_by_role("link", name="web-1-100-live"))
    gone = page.locator("tr", has=page.get_by_role("link", name="web-2-200-gone"))
    assert "reporting" in live.inner_text() and "web-1 / 100" in live.inner_text()
    assert KLASS in live.inner_text() and "64.0\xa0MB" in live.inner_text()
    assert "stopped reporting" in gone.inner_text()
    assert live.get_by_role("button", name="Forget").count() == 0
    gone.get_by_role("button", name="Forget").click()
    assert page.get_by_role("link", name="web-2-200-gone").count() == 0
    assert page.get_by_role("link", name="web-1-100-live").count() == 1


def test_the_job_page_draws_its_dependencies_with_their_states(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    render, send, archive = chain_of_three(qless)
    page, base = browser_page, live_server.url
    open_as_operator(page, base, make_user)
    page.goto(base + url("job", jid=send))
    waits_for = page.get_by_label("Jobs this job waits for")
    needed_by = page.get_by_label("Jobs waiting for this job")
    assert render in waits_for.inner_text() and "waiting" in waits_for.inner_text()
    assert archive in needed_by.inner_text() and "depends" in needed_by.inner_text()
    needed_by.get_by_role("link", name=archive).click()
    page.wait_for_url(f"**{url('job', jid=archive)}")
    assert send in page.get_by_label("Jobs this job waits for").inner_text()


@pytest.mark.django_db(transaction=True, databases="__all__")  # the outbox backlog of each
def test_metrics_are_served_to_an_operator_and_refused_to_others(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    qless.queue("jobs").put(KLASS, DATA)
    page, base = browser_page, live_server.url
    anonymous = page.goto(base + "/qless/metrics")
    assert anonymous is not None and anonymous.status in (401, 403)
    open_as_operator(page, base, make_user)
    response = page.goto(base + "/qless/metrics")
    assert response is not None and response.status == 200
    body = page.locator("body").inner_text()
    waiting = re.search(r'qless_queue_jobs\{[^}]*queue="jobs",state="waiting"\} (\S+)', body)
    assert waiting is not None and float(waiting.group(1)) == 1
