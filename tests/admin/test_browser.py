"""A real browser (Debian's chromium, driven by Playwright) against the live admin.

Logs in, opens the overview and a failure group, retries a failed job from the page,
runs a worker, sees the job complete with both attempts listed, opens the attempts and
return value of a job that completed after a retry, and takes screenshots of the main
pages. They go to a temporary directory; with QLESS_ADMIN_SCREENSHOTS=1 they replace
those in docs/images/.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from django_qless.core import Client
from django_qless.core.presence import KlassCount, Presence, RunningJob, publish
from tests.admin.conftest import ALL_PERMS, KLASS, plant, url
from tests.admin.test_job_attempts_page import TASK_DATA, fail_attempt, popped
from tests.admin.test_xss import PAYLOADS, pages_for, plant_payload
from tests.conftest import LuaScript

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]


@pytest.fixture
def images(tmp_path: Path) -> Path:
    """Where screenshots go: docs/images/ when asked for, else a temporary directory."""
    return DOCS_IMAGES if os.environ.get("QLESS_ADMIN_SCREENSHOTS") == "1" else tmp_path


@pytest.fixture
def browser_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A Chromium page (1280x900); fails the test if any dialog (alert) ever opens."""
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test
    # makes meanwhile are ordinary blocking calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    dialogs: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        yield page
        browser.close()
    assert dialogs == []


def shoot(page: Any, images: Path, name: str) -> None:
    """Save a full-page screenshot."""
    images.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(images / f"admin-{name}.png"), full_page=True)


def log_in(page: Any, base: str) -> None:
    """Log in through the admin's own login form."""
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")


def test_retry_a_failed_job_from_the_browser(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    world = plant(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    assert page.get_by_role("link", name="Overview").count() == 1  # the Qless section

    page.goto(base + url("overview"))
    assert page.get_by_role("heading", name="Failed jobs (1)").is_visible()
    shoot(page, images, "overview")

    page.get_by_role("link", name=world.group).first.click()
    page.wait_for_url(f"**{url('failure_group', group=world.group)}")
    shoot(page, images, "failure-group")

    page.get_by_role("link", name=world.failed).click()
    assert page.locator(".qless-failure .qless-traceback").inner_text().endswith("ValueError: boom")
    shoot(page, images, "job-failed")
    page.get_by_role("button", name="Retry", exact=True).click()
    assert "Retried 1 job." in page.locator(".messagelist").inner_text()
    assert qless.get_job(world.failed).state == "waiting"

    call_command("qless_worker", "broken", burst=True, verbosity=0)
    page.goto(base + url("job", jid=world.failed))
    assert page.locator(".qless-card h2 .qless-state").inner_text() == "complete"
    assert "done" in page.locator(".qless-timeline").inner_text()
    outcomes = page.locator(".qless-attempts .qless-outcome").all_inner_texts()
    assert outcomes == ["failed", "completed"]


def test_retry_every_failed_job_asks_first_in_the_browser(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    for queue in ("broken", "mail"):
        for _ in range(2):
            qless.queue(queue).put(KLASS, {"args": [], "kwargs": {}})
            [job] = qless.queue(queue).pop()
            job.fail(f"{queue}-ValueError", "Traceback\nValueError: boom")
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("failures"))
    page.get_by_role("button", name="Retry every failed job…").click()
    page.wait_for_url(f"**{url('failure_retry_all')}")
    assert "Retry all 4 failed jobs of 2 failure groups?" in page.locator(
        ".qless-confirm").inner_text()
    assert qless.failed() == {"broken-ValueError": 2, "mail-ValueError": 2}
    page.get_by_role("link", name="No, take me back").click()
    page.wait_for_url(f"**{url('failures')}")
    assert qless.failed() == {"broken-ValueError": 2, "mail-ValueError": 2}

    page.get_by_role("button", name="Retry every failed job…").click()
    page.get_by_role("button", name="Yes, I’m sure").click()
    page.wait_for_url(f"**{url('failures')}")
    assert "Retried 4 failed jobs." in page.locator(".messagelist").inner_text()
    assert qless.failed() == {}


def test_a_job_completed_after_a_retry_shows_its_attempts_and_result(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    jid = qless.queue("jobs").put("app.tasks.double", TASK_DATA)
    fail_attempt(popped(qless), "Traceback (most recent call last):\nValueError: first try")
    popped(qless).complete({**TASK_DATA, "result": {"doubled": 4}})
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("job", jid=jid))
    rows = page.locator(".qless-attempts tbody tr")
    assert rows.count() == 2
    assert page.locator(".qless-attempts .qless-outcome").all_inner_texts() == [
        "retried", "completed"
    ]
    traceback = rows.first.locator(".qless-traceback")
    assert not traceback.is_visible()  # collapsed until asked for
    rows.first.locator("summary").click()
    assert traceback.inner_text().endswith("ValueError: first try")
    assert '"doubled": 4' in page.locator(".qless-result").inner_text()
    assert page.locator(".qless-failure").count() == 0
    shoot(page, images, "job-retried")


def test_screenshots_of_the_main_pages(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    world = plant(qless)
    make_user("ops", perms=ALL_PERMS)
    call_command("qless_worker", "jobs", burst=True, verbosity=0)  # fills the stats
    now = qless.now()
    publish(qless, Presence(  # a qless_worker process, as one publishes itself
        name="web-1-4242-3f2a9c1e", host="web-1", pid=4242, version="0.1.0",
        queues=("busy", "jobs"), started=now - 5400, seen=now, done=18_234, failed=12,
        rss_bytes=92 * 1024 * 1024,
        running=(RunningJob(world.running, "app.jobs.render_invoice", now - 12),),
        load=0.42, cpu_seconds=1_130.0,
        settings=(("strategy", "ordered"), ("prefetch", "1"), ("isolation", "none"),
                  ("time_limit", "300.0"), ("max_memory_mb", "512")),
        klasses=(KlassCount("app.jobs.render_invoice", 17_940, 9),
                 KlassCount("app.jobs.send_receipt", 294, 3)),
    ), ttl=60)
    render = qless.queue("pipeline").put("app.jobs.render_issue", {"args": [7], "kwargs": {}})
    send = qless.queue("pipeline").put("app.jobs.send_issue", {"args": [7], "kwargs": {}},
                                       depends=[render])
    qless.queue("pipeline").put("app.jobs.archive_issue", {"args": [7], "kwargs": {}},
                                depends=[send])
    page, base = browser_page, live_server.url
    log_in(page, base)
    pages = {
        "queue-stats": url("queue", name="jobs") + "?tab=stats",
        "queue-running": url("queue", name="busy") + "?tab=running",
        "job-running": url("job", jid=world.running),
        "failures": url("failures"),
        "recurring": url("recurring", jid=world.recurring),
        "config": url("config"),
        "workers": url("workers"),
        "worker": url("worker", name="web-1-4242-3f2a9c1e"),
        "queue-scheduled": url("queue", name="jobs") + "?tab=scheduled",
        "job-depends": url("job", jid=send),
    }
    for name, path in pages.items():
        response = page.goto(base + path)
        assert response is not None and response.status == 200, name
        shoot(page, images, name)
    page.emulate_media(color_scheme="dark")
    page.goto(base + url("overview"))
    shoot(page, images, "overview-dark")
    assert (images / "admin-overview-dark.png").stat().st_size > 10_000


def test_jids_never_wrap_and_keep_their_full_value(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    world = plant(qless)
    long_jid = "nightly-report-" + "7f3a9c" * 12
    qless.queue("broken").put("app.jobs.report", {}, jid=long_jid)
    qless.queue("broken").pop()[0].fail(world.group, "ValueError: boom")
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.set_viewport_size({"width": 900, "height": 900})
    for path in (url("failure_group", group=world.group), url("queue", name="jobs")):
        page.goto(base + path)
        links = page.locator("a.qless-jid-link")
        assert links.count() >= 1, path
        line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight) || 20")
        for index in range(links.count()):
            box = links.nth(index).bounding_box()
            assert box is not None and box["height"] < 1.6 * line, (path, box)
    link = page.locator(f'a.qless-jid-link[title="{long_jid}"]')
    page.goto(base + url("failure_group", group=world.group))
    assert link.inner_text() == long_jid  # cut by CSS only: copying takes the whole jid
    assert link.evaluate("el => el.scrollWidth > el.clientWidth")  # and it is cut
    shoot(page, images, "failure-group-narrow")


def test_planted_markup_never_runs_in_the_browser(
    live_server: Any, make_user: Callable[..., User], lua: LuaScript, browser_page: Any
) -> None:
    now = time.time()
    for payload in PAYLOADS:
        plant_payload(lua, payload, now)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    loaded = 0
    for payload in PAYLOADS:
        for path in pages_for(payload):
            response = page.goto(base + path)
            assert response is not None and response.status == 200, path
            loaded += 1
    assert loaded > 100  # the fixture fails the test if any alert() opened a dialog
