"""In a real browser: a priority change made on a job's page is found on the audit page,
filtered by its jid, with its value before and after, and links back to the job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client
from tests.admin.conftest import ALL_PERMS, plant, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot

__all__ = ["browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]


def test_a_priority_change_is_found_on_the_audit_page(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    world = plant(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)

    page.goto(base + url("job", jid=world.waiting))
    page.locator(".qless-actions").get_by_role("button", name="High").click()
    assert "Changed the priority of 1 job." in page.locator(".messagelist").inner_text()
    assert qless.get_job(world.waiting).priority == 25

    page.get_by_role("navigation", name="Qless sections").get_by_role("link", name="Audit").click()
    page.wait_for_url(f"**{url('audit')}")
    page.get_by_label("Jid or name").fill(world.waiting)
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.qless-audit tbody tr")
    assert rows.count() == 1
    row = rows.first
    assert row.locator("td").nth(1).inner_text() == "ops"
    assert row.locator("td").nth(2).inner_text() == "Priority"
    assert row.locator(".qless-audit-values").inner_text() == "priority: 0 → 25"
    shoot(page, images, "audit")

    row.get_by_role("link", name=world.waiting).click()
    page.wait_for_url(f"**{url('job', jid=world.waiting)}")
