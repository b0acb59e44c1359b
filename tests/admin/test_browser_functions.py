"""In a real browser: the Functions list, sorting it, a range, and one function's page with
its charts and deploy markers; axe-core finds nothing in light, dark and 375 px."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, url
from tests.admin.fn_data import SHOWN, seed
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.admin.test_browser_a11y import axe_script, check, choose_dark_theme, set_mode

__all__ = ["axe_script", "browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]


def test_find_the_costliest_function_and_read_its_charts(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path, axe_script: Path,
) -> None:
    seed(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("overview"))
    page.get_by_role("navigation", name="Qless sections").get_by_role(
        "link", name="Functions").click()
    table = page.locator("table.qless-functions")
    first = table.locator("tbody tr").first.locator("th").inner_text()
    assert first == "app.reports.build_monthly"  # the most total time
    page.get_by_role("link", name="Failures").click()
    assert table.locator("tbody tr").first.locator("th").inner_text() == SHOWN
    page.get_by_role("navigation", name="Range").get_by_role("link", name="7d").click()
    assert "over the last 7 days" in page.locator("#content").inner_text()
    shoot(page, images, "functions")

    table.get_by_role("link", name=SHOWN).click()
    assert page.locator("h1").inner_text().endswith(SHOWN)
    for caption in ("Executions by outcome", "Run time percentiles", "Wait time percentiles",
                    "Run time histogram", "Wait time histogram"):
        assert page.get_by_role("img", name=caption).count() or page.locator(
            "figcaption", has_text=caption).count(), caption
    markers = page.locator("svg.qless-timechart g.qless-marker")
    assert markers.first.is_visible()
    labels = set(markers.locator("text").all_text_contents())
    assert {"v3.4.0", "v3.3.2"} <= labels
    shoot(page, images, "function")
    page.get_by_role("navigation", name="Range").get_by_role("link", name="1h").click()
    assert "v3.3.2" not in page.locator("#content").inner_text()  # 30 h ago: not this hour
    page.get_by_role("link", name=f"Find the jobs of {SHOWN}").click()
    assert page.url.endswith(f"?klass={SHOWN}")


@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_the_functions_pages_pass_axe(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    browser_page: Any, axe_script: Path,
) -> None:
    seed(qless, hours=30)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    tally, problems = axe.Tally(), []
    for label, path in {
        "functions": url("functions"),
        "functions (24h, by failures)": url("functions") + "?range=24h&sort=failures",
        "functions (empty)": url("functions") + "?range=1h&sort=name",
        "function": url("function", klass=SHOWN) + "?range=24h",
        "function (unknown)": url("function", klass="no.such.function"),
    }.items():
        if label == "functions (empty)":
            qless.redis.flushdb()
        response = page.goto(base + path)
        assert response is not None and response.status == 200, label
        problems += check(page, axe_script, label, mode, tally)
    assert problems == [], "\n".join(problems)
