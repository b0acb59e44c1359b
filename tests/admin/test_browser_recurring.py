"""The recurring pages in a real browser: last runs, next runs, Run now, the managed notice.

An operator (Debian's chromium driven by Playwright) reads a template's last spawn and its
outcome, a cron schedule's last slot job, the next runs; runs an interval template now
through its confirmation; and finds, on a template `qless_recur` manages, that edits made
there are reverted by the next sync.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client, keys
from django_qless.core.crons import CronStore, slot_jid
from django_qless.recurring import sync_schedules
from django_qless.schedules import schedule_jid
from tests.admin import test_browser
from tests.admin.conftest import ALL_PERMS, KLASS, url
from tests.admin.test_browser import CHROMIUM, log_in, shoot
from tests.recurring.cron_helpers import define

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]

DATA = {"args": [1, 2], "kwargs": {}}
#: The Chromium page and screenshot fixtures of the main browser test, shared.
browser_page = test_browser.browser_page
images = test_browser.images


def plant_runs(qless: Client) -> str:
    """An hourly template whose first spawn completed, a cron slot job due a minute ago,
    and the schedules declared in code (tests.recurapp) synced: the slot's jid."""
    qless.queue("jobs").recur(KLASS, DATA, 3600, jid="hourly", tags=["nightly"])
    [spawned] = qless.queue("jobs").pop()
    spawned.complete()
    definition = define(qless, "* * * * *", name="minutely")
    now = qless.now()
    slot = float(int(now) - 60)
    CronStore(qless).put_slots(definition, [slot], now)
    sync_schedules(clients={"default": qless})
    return slot_jid("minutely", slot, definition.digest)


def test_last_and_next_runs_run_now_and_the_managed_notice(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    cron_job = plant_runs(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)

    page.goto(base + url("recurring_list") + "?queue=jobs")
    row = page.locator("tr", has=page.get_by_role("link", name="hourly", exact=True))
    last = row.locator(".qless-last-run")
    assert last.get_by_role("link", name="hourly-1").count() == 1
    assert last.locator(".qless-state").inner_text() == "complete"
    assert re.search(r"due \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", last.inner_text())
    assert row.locator("ol li").count() == 3
    assert re.search(r"\(in (59 min|1 h)", row.locator("ol li").first.inner_text())
    cron_row = page.locator(".qless-cron tr", has=page.get_by_text("minutely", exact=True))
    assert cron_row.get_by_role("link", name=cron_job).count() == 1
    assert cron_row.locator(".qless-state").inner_text() == "waiting"
    shoot(page, images, "recurring-runs")

    recur = keys.queue_set("jobs", "recur")
    next_run = qless.redis.zscore(recur, "hourly")
    row.get_by_role("button", name="Run now…").click()
    assert "Put one tests.testapp.qless_jobs.add job of recurring job hourly" in (
        page.locator(".qless-confirm").inner_text())
    page.get_by_role("button", name="Yes, I’m sure").click()
    message = page.locator(".messagelist .success").inner_text()
    put = re.search(r"Put job (hourly-now-[0-9a-f]+) of recurring job hourly", message)
    assert put is not None, message
    job = qless.get_job(put.group(1))
    assert job is not None and (job.state, job.queue_name, job.tags) == (
        "waiting", "jobs", ("nightly",))
    assert qless.redis.zscore(recur, "hourly") == next_run  # the schedule did not move
    assert page.url.endswith("?queue=jobs")  # back where the button was

    page.goto(base + url("recurring", jid=schedule_jid("recurapp.poll_feed")))
    notice = page.locator(".qless-notice")
    assert notice.is_visible()
    assert "edits made here are reverted by the next sync" in notice.inner_text()
    assert "recurapp.poll_feed" in notice.inner_text()
    # Above the form it warns about.
    box, form = notice.bounding_box(), page.locator("form.qless-form").bounding_box()
    assert box is not None and form is not None and box["y"] < form["y"]
    assert page.locator(".qless-fields ol li").count() == 5
    assert "none yet" in page.locator(".qless-fields").inner_text()
    shoot(page, images, "recurring-managed")
