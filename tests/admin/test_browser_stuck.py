"""In a real browser: the overview's "What is stuck" with one of each kind, a latency
threshold set from the queue page, and axe-core at 0 violations in light, dark and 375 px."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client, keys
from django_qless.core.crons import CronStore
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, KLASS, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.admin.test_browser_a11y import axe_script, check, choose_dark_theme, set_mode
from tests.recurring.cron_helpers import define

__all__ = ["axe_script", "browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]

#: The kinds of line the planted situation shows.
KINDS = ("worker", "stalled", "blocked", "recurring", "cron", "late-slot", "paused", "latency")


def plant_stuck(qless: Client) -> None:
    """One of each stuck kind: a silent worker with a stalled job, a job waiting on a failed
    one, a template and a cron slot overdue, a slot job not run, a long wait, a long pause."""
    past = Client(qless.redis, worker_name="ruby-host-9", clock=lambda: qless.now() - 3600)
    past.queue("reports").put(KLASS, {}, jid="monthly-report-2026-11")
    past.queue("reports").pop()
    past.queue("reports").put(KLASS, {}, jid="report-waiting-since-an-hour")
    flow = qless.queue("invoices")
    parent = flow.put(KLASS, {}, jid="render-invoice-4711")
    flow.put(KLASS, {}, jid="mail-invoice-4711", depends=[parent])
    [job] = flow.pop()
    job.fail("invoices-TemplateError", "TemplateError: missing block 'total'")
    past.queue("nightly").recur(KLASS, {}, 86400, jid="nightly-cleanup")
    define(past, "* * * * *", name="sync-ledger")
    CronStore(past).create_slots("sync-ledger")
    qless.queue("mail").put(KLASS, {})
    qless.queue("mail").pause()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_stuck_panel_threshold_and_axe(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    browser_page: Any, images: Path, axe_script: Path,
) -> None:
    plant_stuck(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    page.goto(base + url("overview"))  # first sight of "mail" paused: dated now
    qless.redis.hset(keys.PAUSED_SINCE, "mail",
                     json.dumps({"at": qless.now() - 5400, "by": "seen"}))
    page.goto(base + url("overview"))
    panel = page.get_by_role("region", name="What is stuck")
    for kind in KINDS:
        assert panel.locator(f'[data-qless-stuck="{kind}"]').count() == 1, kind
    assert "Nothing stuck" not in panel.inner_text()
    tally = axe.Tally()
    problems = check(page, axe_script, "overview (stuck)", mode, tally)

    if mode == "light":
        shoot(page, images, "overview-stuck")
        # The stalled line leads to the queue's stalled tab, with the job.
        panel.get_by_role("link", name="1 stalled job in queue reports").click()
        page.wait_for_url("**?tab=stalled")
        page.get_by_role("link", name="monthly-report-2026-11").wait_for(timeout=5000)
        # A threshold of two hours for "reports", set on its page, takes it off the panel.
        page.goto(base + url("queue", name="reports"))
        page.locator("summary", has_text="Queue settings").click()
        page.get_by_label("Latency threshold").fill("7200")
        page.get_by_role("button", name="Save threshold").click()
        assert "latency threshold 2 h" in page.locator(".messagelist").inner_text()
        [entry] = AuditEntry.objects.all()
        assert (entry.action, entry.target, entry.after) == (
            "latency_threshold", "reports", {"latency threshold": 7200.0})
        page.goto(base + url("overview"))
        assert page.locator("[data-qless-stuck=latency]").count() == 0
    else:
        page.goto(base + url("queue", name="reports"))
        page.locator("summary", has_text="Queue settings").click()
        problems += check(page, axe_script, "queue settings", mode, tally)
    assert problems == [], "\n".join(problems)
