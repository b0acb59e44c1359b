"""In a real browser: select all the waiting jobs of a queue tab, confirm the count, and
watch the run finish by itself (its page posts each next chunk); axe-core on each of its
pages in light, dark and at 375 px."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User

from django_qless.admin import bulk_all
from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.admin.test_browser_a11y import axe_script, check, choose_dark_theme, set_mode
from tests.admin.test_bulk_all import plant_waiting
from tests.conftest import LuaScript

__all__ = ["axe_script", "browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]

#: Three chunks.
JOBS = bulk_all.CHUNK * 2 + 50


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_select_all_matching_on_a_queue_tab_and_watch_it_finish(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    lua: LuaScript, redis_client: redis.Redis, browser_page: Any, images: Path,
    axe_script: Path,
) -> None:
    jids = plant_waiting(lua, redis_client, JOBS, queue="bulk")
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    tally, problems = axe.Tally(), []

    page.goto(base + url("queue", name="bulk") + "?tab=waiting")
    page.get_by_role("link", name=f"Select all {JOBS} matching…").click()
    page.wait_for_url(lambda address: url("bulk_choose") in address)
    assert "Jobs matching queue bulk, state waiting" in page.locator("#content").inner_text()
    problems += check(page, axe_script, "bulk choose", mode, tally)
    page.get_by_label("Set priority").check()
    page.get_by_label("New priority").fill("5")
    page.get_by_role("button", name="Collect the matching jobs").click()

    question = page.locator(".qless-bulk-question")
    question.wait_for()
    assert question.inner_text() == (
        f"Set priority to 5: all {JOBS} jobs matching queue bulk, state waiting?")
    assert {job.priority for job in qless.get_jobs(jids)} == {0}  # nothing done yet
    problems += check(page, axe_script, "bulk confirmation", mode, tally)
    if mode == "light":
        shoot(page, images, "bulk-confirm")

    page.get_by_role("button", name=f"Yes, set priority all {JOBS}").click()
    status = page.locator(".qless-bulk-status")
    page.wait_for_function(
        "() => document.querySelector('.qless-bulk-run')?.dataset.phase === 'done'",
        timeout=60_000,
    )
    assert status.inner_text() == (
        f"Done: {JOBS} of {JOBS} jobs changed, 0 not done, in 3 chunks.")
    assert {job.priority for job in qless.get_jobs(jids)} == {5}
    assert AuditEntry.objects.filter(action="priority").count() == JOBS
    problems += check(page, axe_script, "bulk run (done)", mode, tally)
    if mode == "light":
        shoot(page, images, "bulk")

    page.goto(base + url("bulk_runs"))
    assert "done" in page.locator("table.qless-table").inner_text()
    problems += check(page, axe_script, "bulk runs", mode, tally)
    assert problems == [], "\n".join(problems)
