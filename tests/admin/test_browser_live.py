"""Live pages in a real browser: the overview's charts, counts changing without a reload, the
Pause button, no request while the tab is hidden, no swap under a user's checked boxes."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from django_qless.core import Client, QueueCounts
from django_qless.core.live import add_throughput, read_history
from tests.admin.conftest import ALL_PERMS, url
from tests.admin.test_browser import browser_page, images, log_in, pytestmark, shoot

__all__ = ["browser_page", "images", "pytestmark"]

#: Longer than one round of live.js (5 s), with a margin.
ROUND = 7.0
HOUR_COMPLETED = '[data-qless-stat="hour-completed"]'


def finished(qless: Client, queue: str, completed: int, failed: int, at: float,
             retried: int = 0, run_ms: int = 0) -> None:
    """Throughput as a worker adds it."""
    pipe = qless.redis.pipeline()
    add_throughput(pipe, Counter({(queue, "completed"): completed, (queue, "failed"): failed,
                                  (queue, "retried"): retried, (queue, "ms"): run_ms}), at)
    pipe.execute()


def plant_half_an_hour(qless: Client) -> None:
    """Thirty minutes of throughput and depth samples on two queues (none older, so the
    hour's totals only move when the test adds to them), and the jobs they hold now."""
    for number in range(40):
        qless.queue("mail").put("app.jobs.send_mail", {"args": [number], "kwargs": {}})
    for number in range(6):
        qless.queue("video").put("app.jobs.encode", {"args": [number], "kwargs": {}})
    now = qless.now()
    for back in range(1, 31):
        at = now - 60 * back
        mails = 20 + (back * 7) % 15
        finished(qless, "mail", mails, back % 4 // 3, at, retried=back % 4,
                 run_ms=mails * (120 + 5 * (back % 7)))
        videos = 5 + back % 6
        finished(qless, "video", videos, 1 if back % 9 == 0 else 0, at,
                 run_ms=videos * (900 + 40 * (back % 5)))
        read_history(qless, at, offer=[
            QueueCounts("mail", waiting=40 + back, running=4, scheduled=10),
            QueueCounts("video", waiting=3 * back % 17, running=2, stalled=1 if back < 5 else 0),
        ])


def live_requests(page: Any) -> list[str]:
    """The URLs of the live refreshes the page makes from now on."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url)
            if request.headers.get("x-qless-live") == "1" else None)
    return seen


def shown(page: Any, selector: str) -> int:
    """A number the page shows."""
    return int(page.locator(selector).inner_text())


def set_hidden(page: Any, hidden: bool) -> None:
    """Make the document hidden or visible, as switching tabs does."""
    page.evaluate("""hidden => {
        Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
        Object.defineProperty(document, "visibilityState",
                              {configurable: true, get: () => hidden ? "hidden" : "visible"});
        document.dispatchEvent(new Event("visibilitychange"));
    }""", hidden)


def test_the_overview_charts_update_pause_and_stop_while_hidden(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    plant_half_an_hour(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("overview"))
    charts = page.locator("svg.qless-timechart")
    assert charts.count() == 4 and charts.first.is_visible()
    assert page.locator("svg.qless-timechart rect.qless-series-completed").count() >= 30
    assert page.locator(".qless-by-queue svg.qless-spark").count() == 2
    page.evaluate("window.qlessNotReloaded = true")

    # A worker adds what it finished: the figure changes without a reload.
    before = shown(page, HOUR_COMPLETED)
    finished(qless, "mail", 7, 0, qless.now(), run_ms=7 * 130)
    page.wait_for_function(f"document.querySelector('{HOUR_COMPLETED}').textContent == "
                           f"'{before + 7}'", timeout=15_000)
    assert page.evaluate("window.qlessNotReloaded") is True
    shoot(page, images, "overview-live")

    # Paused: no request, nothing changes, and the choice survives a reload.
    pause = page.locator("button.qless-live-pause")
    pause.click()
    assert pause.get_attribute("aria-pressed") == "true"
    requests = live_requests(page)
    finished(qless, "mail", 5, 0, qless.now())
    page.wait_for_timeout(ROUND * 1000)
    assert requests == [] and shown(page, HOUR_COMPLETED) == before + 7
    page.reload()
    pause = page.get_by_role("button", name="Resume live updates")
    assert pause.get_attribute("aria-pressed") == "true"
    page.evaluate("window.qlessNotReloaded = true")
    finished(qless, "mail", 1, 0, qless.now())
    pause = page.locator("button.qless-live-pause")
    pause.press("Enter")  # the keyboard resumes too, at once
    assert pause.get_attribute("aria-pressed") == "false"
    page.wait_for_function(f"document.querySelector('{HOUR_COMPLETED}').textContent == "
                           f"'{before + 13}'", timeout=5_000)

    # Hidden: no request at all; visible again: a refresh at once.
    set_hidden(page, True)
    time.sleep(0.5)  # a round already on its way may still land
    requests.clear()
    page.wait_for_timeout(ROUND * 1000)
    assert requests == []
    set_hidden(page, False)
    page.wait_for_timeout(1000)
    assert len(requests) == 1
    assert page.evaluate("window.qlessNotReloaded") is True


def test_the_live_updates_button_says_pause_or_resume_as_its_state_is(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("workers"))
    button = page.locator("button.qless-live-pause")
    assert (button.inner_text(), button.get_attribute("aria-pressed")) == (
        "Pause live updates", "false")
    button.click()
    assert (button.inner_text(), button.get_attribute("aria-pressed")) == (
        "Resume live updates", "true")
    assert page.get_by_role("button", name="Pause live updates").count() == 0
    page.reload()  # the paused state and its label survive a reload, on every page
    page.goto(base + url("overview"))
    button = page.locator("button.qless-live-pause")
    assert (button.inner_text(), button.get_attribute("aria-pressed")) == (
        "Resume live updates", "true")
    button.press("Enter")
    assert (button.inner_text(), button.get_attribute("aria-pressed")) == (
        "Pause live updates", "false")


def test_the_queue_and_workers_pages_update_but_never_under_checked_boxes(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    make_user("ops", perms=ALL_PERMS)
    queue = qless.queue("jobs")
    queue.put("app.jobs.one", {"args": [], "kwargs": {}})
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("queue", name="jobs") + "?tab=waiting")
    page.evaluate("window.qlessNotReloaded = true")
    rows = page.locator("#qless-live tbody input[type=checkbox]")
    assert rows.count() == 1

    queue.put("app.jobs.two", {"args": [], "kwargs": {}})
    page.wait_for_function(
        "document.querySelectorAll('#qless-live tbody input[type=checkbox]').length == 2",
        timeout=15_000)

    rows.first.check()
    page.locator("h1").first.click()  # focus leaves the box: only its checked state holds
    queue.put("app.jobs.three", {"args": [], "kwargs": {}})
    page.wait_for_timeout(ROUND * 1000)
    assert rows.count() == 2 and rows.first.is_checked()  # the user's selection was kept
    rows.first.uncheck()
    page.locator("h1").first.click()
    page.wait_for_function(
        "document.querySelectorAll('#qless-live tbody input[type=checkbox]').length == 3",
        timeout=15_000)
    assert page.evaluate("window.qlessNotReloaded") is True

    page.goto(base + url("workers"))
    page.evaluate("window.qlessNotReloaded = true")
    assert "No worker seen recently." in page.locator("#qless-live").inner_text()
    queue.pop()  # this client becomes a worker qless knows
    page.wait_for_function(
        f"document.getElementById('qless-live').textContent.includes('{qless.worker_name}')",
        timeout=15_000)
    assert page.evaluate("window.qlessNotReloaded") is True


def test_signing_out_stops_the_updates_with_a_message(
    live_server: Any, make_user: Callable[..., User], browser_page: Any,
) -> None:
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("overview"))
    page.context.clear_cookies()
    status = page.locator(".qless-live-state")
    page.wait_for_function(
        "document.querySelector('.qless-live-state').textContent.includes('signed out')",
        timeout=15_000)
    assert "Reload the page" in status.inner_text()


def test_a_running_job_page_follows_the_job_until_it_completes(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    make_user("ops", perms=ALL_PERMS)
    jid = qless.queue("jobs").put("app.jobs.one", {"args": [], "kwargs": {}})
    (job,) = qless.queue("jobs").pop()
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("job", jid=jid))
    page.evaluate("window.qlessNotReloaded = true")
    state = page.locator(".qless-card h2 .qless-state")
    assert state.inner_text() == "running"
    job.complete()
    page.wait_for_function(
        "document.querySelector('.qless-card h2 .qless-state').textContent == 'complete'",
        timeout=15_000)
    assert "no longer changes" in page.locator(".qless-live-state").inner_text()
    assert page.evaluate("window.qlessNotReloaded") is True
