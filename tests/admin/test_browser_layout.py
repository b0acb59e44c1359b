"""Wide-screen layout (1440 px) in a real browser: the buttons of the workers and failures
pages stay in view, inside their table's visible box, rather than cut off or scrolled away."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from django_qless.core import Client
from django_qless.core.presence import Presence, RunningJob, publish
from tests.admin.conftest import ALL_PERMS, KLASS, url
from tests.admin.test_browser import browser_page, log_in, pytestmark

__all__ = ["browser_page", "pytestmark"]

WIDE = {"width": 1440, "height": 900}
#: Worker names as `qless_worker` makes them (host-pid-random) on hosts with long names.
HOST = "ip-172-31-44-187.eu-west-1.compute.internal"


def plant_workers(qless: Client, count: int = 4) -> list[str]:
    """Reporting workers running jobs, as under load, and as many that stopped reporting."""
    now = qless.now()
    names = []
    for number in range(count):
        name = f"{HOST}-{31000 + number}-3f2a9c{number:02d}"
        theirs = Client(qless.redis, worker_name=name)
        jid = theirs.queue("invoices").put("app.billing.jobs.render_monthly_invoice_pdf", {})
        theirs.queue("invoices").pop()
        publish(qless, Presence(
            name=name, host=HOST, pid=31000 + number, version="0.1.0",
            queues=("invoices", "mail", "reports-nightly"), started=now - 5400, seen=now,
            done=18_234, failed=12, rss_bytes=92 * 1024 * 1024, load=3.42,
            cpu_seconds=1_130.0,
            running=(RunningJob(jid, "app.billing.jobs.render_monthly_invoice_pdf", now - 3),),
        ), ttl=60)
        names.append(name)
        silent = f"{HOST}-{32000 + number}-9c1e7b{number:02d}"
        qless.redis.zadd("ql:workers", {silent: now - 7200})
        names.append(silent)
    return names


def plant_failures(qless: Client) -> None:
    """Failure groups with long names and long messages."""
    for number in range(3):
        queue = f"reports-nightly-{number}"
        qless.queue(queue).put(KLASS, {})
        [job] = qless.queue(queue).pop()
        job.fail(f"{queue}-requests.exceptions.ConnectionError",
                 "Traceback (most recent call last):\nrequests.exceptions.ConnectionError: "
                 "HTTPSConnectionPool(host='api.payments.example.com',port=443):Max_retries_"
                 "exceeded_with_url:/v1/charges/ch_3NqLxY2eZvKYlo2C1a8b9c0d?expand[]=balance_"
                 "transaction&expand[]=customer&expand[]=invoice.subscription.default_source")


def clipped(page: Any, selector: str) -> list[str]:
    """Each element matching `selector` that is not wholly in view: outside the window, or
    outside the visible box of a container that clips it (a table scrolling sideways)."""
    return list(page.evaluate(
        """(selector) => {
          const problems = [];
          const width = document.documentElement.clientWidth;
          for (const el of document.querySelectorAll(selector)) {
            const r = el.getBoundingClientRect();
            const label = `"${el.textContent.trim()}"`;
            if (r.width === 0 || r.height === 0) { problems.push(`${label} not shown`); continue; }
            if (r.left < 0 || r.right > width + 0.5)
              problems.push(`${label} outside the window (${r.left}..${r.right} of ${width})`);
            for (let at = el.parentElement; at; at = at.parentElement) {
              const style = getComputedStyle(at);
              if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
              const box = at.getBoundingClientRect();
              if (r.left < box.left - 0.5 || r.right > box.right + 0.5)
                problems.push(`${label} cut off by ${at.tagName.toLowerCase()}.`
                  + `${[...at.classList].join('.')} (${r.left}..${r.right} in `
                  + `${box.left}..${box.right})`);
            }
          }
          return problems; }""",
        selector,
    ))


def test_the_workers_forget_buttons_are_in_view_at_1440_px(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    plant_workers(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    page.set_viewport_size(WIDE)
    log_in(page, base)
    page.goto(base + url("workers"))
    forget = page.get_by_role("button", name="Forget")
    assert forget.count() == 4
    assert clipped(page, ".qless-workers button") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
    # The whole table fits: no column is scrolled out of sight either.
    assert page.evaluate("[...document.querySelectorAll('.qless-scroll')].every("
                         "(box) => box.scrollWidth <= box.clientWidth + 1)")


def test_the_failures_cancel_all_buttons_are_in_view_at_1440_px(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
) -> None:
    plant_failures(qless)
    make_user("ops", perms=ALL_PERMS)
    page, base = browser_page, live_server.url
    page.set_viewport_size(WIDE)
    log_in(page, base)
    page.goto(base + url("failures"))
    assert page.get_by_role("button", name="Cancel all…").count() == 3
    assert clipped(page, "#content button, #content .button") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
    assert page.evaluate("[...document.querySelectorAll('.qless-scroll')].every("
                         "(box) => box.scrollWidth <= box.clientWidth + 1)")
