"""In a real browser: find jobs by class and state, page on and back, axe-core at 0 violations
in light, dark and narrow (375 px); the light results page is the docs' screenshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, KLASS, plant, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.admin.test_browser_a11y import axe_script, check, choose_dark_theme, set_mode

__all__ = ["axe_script", "browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]

MAILER = "tests.testapp.qless_jobs.send_mail"


def plant_mail(qless: Client) -> list[str]:
    """30 waiting mail jobs (in pop order), some other jobs, one mail job running."""
    plant(qless)
    jids = [qless.queue("mail").put(MAILER, {"to": f"user{n}@example.com"}, jid=f"mail-{n:02d}",
                                    priority=-n, tags=["newsletter"]) for n in range(31)]
    for n in range(10):
        qless.queue("mail").put(KLASS, {"n": n}, priority=-100)
    qless.queue("mail").pop()  # mail-00 runs
    return jids[1:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_find_jobs_by_class_and_state_and_page_on(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    browser_page: Any, images: Path, axe_script: Path,
) -> None:
    waiting = plant_mail(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    tally, problems = axe.Tally(), []

    # The top bar's box leads to the search page; a prefix that is no jid searches by it.
    page.goto(base + url("overview"))
    box = page.get_by_role("searchbox", name="Find a job by jid or tag")
    box.fill("mail-1")
    box.press("Enter")
    page.wait_for_url(f"**{url('search')}?jid_prefix=mail-1")
    rows = page.locator(".qless-table tbody tr")
    assert rows.count() == 10  # mail-10 .. mail-19
    problems += check(page, axe_script, "search by jid prefix", mode, tally)

    page.goto(base + url("search"))
    form = page.get_by_role("search", name="Find jobs")
    page.get_by_label("Class", exact=True).fill(MAILER)
    page.get_by_label("State", exact=True).select_option("waiting")
    form.get_by_role("button", name="Find").click()
    page.wait_for_url("**klass=*")
    status = page.get_by_role("status")
    # The page stops at 25 matches: 2 waiting jobs of queue "jobs", then 25 of "mail".
    assert "looked at 27 of 42 candidates, 25 found on this page. Look further" in (
        status.inner_text()
    )
    assert [rows.nth(n).locator(".qless-jid").inner_text() for n in range(rows.count())] == (
        waiting[:25]
    )
    assert page.get_by_label("State", exact=True).input_value() == "waiting"
    problems += check(page, axe_script, "search results", mode, tally)
    if mode == "light":
        shoot(page, images, "search")

    page.get_by_role("link", name="Next ›").click()
    page.wait_for_url("**cursor=*")
    assert [rows.nth(n).locator(".qless-jid").inner_text() for n in range(rows.count())] == (
        waiting[25:]
    )
    assert "Page 2" in page.locator(".qless-pagination").inner_text()
    assert "looked at 42 of 42 candidates (all of them), 5 found on this page." in (
        status.inner_text()
    )
    page.get_by_role("link", name="‹ Previous").click()
    page.wait_for_load_state()
    assert rows.first.locator(".qless-jid").inner_text() == waiting[0]

    # Bad input gets its message next to the form.
    page.get_by_label("In its state since").fill("2030-01-02T00:00:00")
    page.get_by_label("and not after").fill("2030-01-01T00:00:00")
    form.get_by_role("button", name="Find").click()
    assert page.get_by_role("alert").inner_text() == "the time range ends before it starts"
    problems += check(page, axe_script, "search error", mode, tally)
    assert problems == [], "\n".join(problems)
