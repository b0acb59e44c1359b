"""The charts in a real browser: drawn at twice their old size or more, axis text at the
page's text size, the 1 h / 24 h / 7 d ranges, deploy markers, millisecond histograms; axe
clean in light, dark and at 375 px, where a chart scrolls sideways inside its box."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_qless.core import Client, QueueCounts
from django_qless.core.deploys import mark_deploy
from django_qless.core.live import add_throughput, read_history
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, url
from tests.admin.test_browser import browser_page, images, log_in, pytestmark, shoot
from tests.admin.test_browser_a11y import axe_script, check, choose_dark_theme, set_mode

__all__ = ["axe_script", "browser_page", "images", "pytestmark"]

#: The old charts' rendered size (px), which these must at least double.
OLD_WIDTH, OLD_HEIGHT = 335, 94
#: A chart's rendered box, its axis text's size as drawn, and the page's body text size.
MEASURE = """(svg) => {
  const box = svg.getBoundingClientRect();
  const scale = box.width / svg.viewBox.baseVal.width;
  const text = svg.querySelector('text.qless-axis-text');
  return {width: box.width, height: box.height,
          axis: parseFloat(getComputedStyle(text).fontSize) * scale,
          drawn: text.getBoundingClientRect().height,
          body: parseFloat(getComputedStyle(document.body).fontSize)};
}"""


def plant_a_week(qless: Client) -> None:
    """A week of throughput and depth on two queues, busier in the day, and two deploys."""
    now = qless.now()
    for back in range(0, 7 * 24 * 60, 20):  # every 20 minutes for a week
        at = now - 60 * back
        hour = int(at // 3600) % 24
        busy = 30 + (40 if 8 <= hour < 20 else 0) + back % 11
        pipe = qless.redis.pipeline(transaction=False)
        add_throughput(pipe, Counter({
            ("mail", "completed"): busy, ("mail", "failed"): back % 7 // 6,
            ("mail", "retried"): back % 5 // 4, ("mail", "ms"): busy * (120 + back % 90),
            ("video", "completed"): busy // 4, ("video", "ms"): busy // 4 * 1400,
        }), at)
        pipe.execute()
        read_history(qless, at, offer=[
            QueueCounts("mail", waiting=40 + back % 60, running=4, scheduled=10),
            QueueCounts("video", waiting=back % 17, running=2),
        ])
    mark_deploy(qless.redis, "v41", now - 3 * 86400)
    mark_deploy(qless.redis, "v42 hotfix", now - 25 * 60)


def test_charts_are_large_readable_ranged_and_marked(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    plant_a_week(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    log_in(page, base)
    page.goto(base + url("overview"))
    charts = page.locator("svg.qless-timechart")
    assert charts.count() == 4
    for index in range(4):
        size = charts.nth(index).evaluate(MEASURE)
        assert size["width"] >= 2 * OLD_WIDTH and size["height"] >= 2 * OLD_HEIGHT, size
        # Axis text is drawn at the page's text size or more, not shrunk with the SVG.
        assert size["axis"] >= size["body"] and size["drawn"] >= size["body"] * 0.9, size
    # The hour's deploy, on every chart, labelled and in the text alternative.
    markers = page.locator("svg.qless-timechart g.qless-marker")
    assert markers.count() == 4 and markers.first.is_visible()
    assert markers.first.locator("text").text_content() == "v42 hotfix"
    assert "Deploys marked: v42 hotfix." in page.locator("#qless-throughput-summary").inner_text()
    assert page.locator("svg.qless-timechart text.qless-axis-title").first.text_content() == (
        "jobs per minute")

    # The week: another range, kept by the live refresh, both deploys marked.
    page.get_by_role("link", name="Last 7 days").click()
    page.wait_for_url("**?range=7d")
    assert page.locator("#qless-live-title").inner_text() == "Last 7 days: all queues"
    assert page.get_by_role("link", name="Last 7 days").get_attribute("aria-current") == "page"
    throughput = page.locator("svg.qless-timechart").first
    assert throughput.get_attribute("aria-label") == (
        "Jobs finished per hour over the last 7 days, all queues")
    assert throughput.locator("rect").count() >= 7 * 24 - 1
    labels = throughput.locator("g.qless-marker text").all_text_contents()
    assert labels == ["v41", "v42 hotfix"]
    page.evaluate("window.qlessNotReloaded = true")
    with page.expect_request(lambda request: request.headers.get("x-qless-live") == "1"
                             and "range=7d" in request.url, timeout=15_000):
        pass
    page.wait_for_timeout(500)
    assert page.evaluate("window.qlessNotReloaded") is True
    assert page.locator("#qless-live-title").inner_text() == "Last 7 days: all queues"
    shoot(page, images, "overview-7d")

    page.get_by_role("link", name="Last 24 hours").click()
    page.wait_for_url("**?range=24h")
    assert page.locator("svg.qless-timechart").first.get_attribute("aria-label") == (
        "Jobs finished per 15 minutes over the last 24 hours, all queues")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_the_charts_pass_axe_and_hold_at_375_px(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    browser_page: Any, axe_script: Path,
) -> None:
    plant_a_week(qless)
    qless.queue("mail").put("app.jobs.send_mail", {"args": [], "kwargs": {}})
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    tally, problems = axe.Tally(), []
    for span in ("1h", "24h", "7d"):
        page.goto(base + url("overview") + f"?range={span}")
        problems += check(page, axe_script, f"overview ({span})", mode, tally)
    page.goto(base + url("queue", name="mail") + "?tab=stats")
    problems += check(page, axe_script, "queue stats", mode, tally)
    assert problems == [], "\n".join(problems)
    # None at all, of any impact, on the pages with charts.
    assert tally.pages == 4 and sum(tally.by_impact.values()) == 0, tally.summary()
    if mode == "narrow":
        page.goto(base + url("overview") + "?range=7d")
        box = page.locator(".qless-chart-scroll").first
        # The page keeps its width; the chart keeps its size and scrolls inside its box.
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        assert box.evaluate("el => el.scrollWidth > el.clientWidth")
        size = page.locator("svg.qless-timechart").first.evaluate(MEASURE)
        assert size["axis"] >= size["body"], size
