"""Every admin page, checked by axe-core in a real browser: light, dark and narrow (375 px).

The pages are planted with jobs in every state and walked in Debian's chromium through
Playwright. On each page axe-core (from the npm registry, see `tests/admin/axe.py`) must
find no violation of impact "serious" or "critical". Dark mode is the admin's own (its
theme toggle, pressed until it says dark, plus the system preference); in light and dark the
charts' marks must stand out 3:1 from their panel; on a narrow screen the page must not
scroll sideways (wide tables scroll inside their own box) and its headings, main content and
buttons must stay on screen. Every page route of `admin/routes.py` must be visited, so a new
page cannot be left out. The figures are printed at the end of each mode.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import resolve

from django_qless.admin import audit
from django_qless.admin.routes import ROUTES
from django_qless.audit_log.models import Kind
from django_qless.core import Client
from django_qless.core.crons import CronStore
from django_qless.core.presence import Presence, RunningJob, publish
from django_qless.recurring import sync_schedules
from django_qless.schedules import schedule_jid
from tests.admin import axe
from tests.admin.conftest import ALL_PERMS, KLASS, World, plant, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.admin.test_job_attempts_page import TASK_DATA, fail_attempt, popped
from tests.recurring.cron_helpers import define

__all__ = ["browser_page", "images"]  # fixtures, used by name

NARROW = 375
#: Boxes that are meant to scroll sideways on a narrow screen (wide tables, tracebacks).
SCROLLERS = ".qless-selection .results, .qless-scroll, .qless-graph-body, pre"
#: A qless_worker process that publishes its presence.
REPORTING = "web-1-4242-3f2a9c1e"
#: One paused from the admin (its badge, and Resume in place of Pause).
PAUSED = "web-2-4343-7b1d0e55"
QUEUE_TABS = ("stats", "running", "waiting", "scheduled", "stalled", "depends", "recurring")

ADMIN_CSS = Path(__file__).resolve().parents[2] / "django_qless/static/django_qless/admin.css"
#: A colour written out (#abc, rgb(), hsl() or a name) rather than taken from the admin's variables.
LITERAL_COLOUR = re.compile(
    r"#[0-9a-f]{3,8}\b|\b(?:rgba?|hsla?)\(|:\s*(?:white|black|red|green|blue|gray|grey)\b", re.I
)


@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe.min.js, installed from the npm registry once per machine; needs chromium too."""
    if not CHROMIUM.exists():
        axe.unavailable(f"needs Debian's chromium ({CHROMIUM})")
    return axe.install()


def plant_everything(qless: Client) -> tuple[World, str]:
    """Jobs in every state, a reporting worker, a silent one, a job retried then completed, a
    cron schedule with a slot job due, and the schedules declared in code synced."""
    world = plant(qless)
    call_command("qless_worker", "jobs", burst=True, verbosity=0)  # fills the stats
    world = plant(qless)  # and a fresh set, waiting and scheduled again
    retried = qless.queue("retried").put("app.tasks.double", TASK_DATA)
    fail_attempt(popped(qless, "retried"), "Traceback (most recent call last):\nValueError: 1")
    popped(qless, "retried").complete({**TASK_DATA, "result": {"doubled": 4}})
    sync_schedules(clients={"default": qless})
    morning = define(qless, "0 9 * * MON-FRI", tz="Europe/Paris", name="morning")
    CronStore(qless).put_slots(morning, [float(int(qless.now()) - 60)], qless.now())
    now = qless.now()
    publish(qless, Presence(
        name=REPORTING, host="web-1", pid=4242, version="0.1.0",
        queues=("busy", "jobs"), started=now - 5400, seen=now, done=18_234, failed=12,
        rss_bytes=92 * 1024 * 1024,
        running=(RunningJob(world.running, "app.jobs.render_invoice", now - 12),),
    ), ttl=60)
    publish(qless, Presence(
        name=PAUSED, host="web-2", pid=4343, version="0.1.0", queues=("jobs",),
        started=now - 600, seen=now, done=12, paused_by="alice",
    ), ttl=60)
    # Silent for two hours, so its row (tinted, with a Forget button) is always on the page.
    qless.redis.zadd("ql:workers", {"web-3-4545-silent": now - 7200})
    return world, retried


def audited(user: User, world: World) -> None:
    """Entries on the audit page: a job's priority, a queue paused, a long jid."""
    audit.record_as(user, "default", [
        audit.Change("priority", Kind.JOB, world.waiting, "Set priority", before={"priority": 0},
                     after={"priority": 25}),
        audit.Change("pause", Kind.QUEUE, "jobs", "Paused queue jobs",
                     before={"paused": False}, after={"paused": True}),
        audit.Change("tag", Kind.JOB, "j" * 120, "Tagged a job with a long jid",
                     before={"tags": ["red"]}, after={"tags": ["blue", "red"]}),
    ])


def pages(world: World, retried: str) -> dict[str, str]:
    """Every admin page, by label: each queue tab, a job in each state, each list."""
    queue = url("queue", name="jobs")
    return {
        "overview": url("overview"),
        "queues": url("queues"),
        **{f"queue ({tab})": f"{queue}?tab={tab}" for tab in QUEUE_TABS},
        "queue (busy, running)": url("queue", name="busy") + "?tab=running",
        "job (waiting)": url("job", jid=world.waiting),
        "job (scheduled)": url("job", jid=world.scheduled),
        "job (running)": url("job", jid=world.running),
        "job (failed)": url("job", jid=world.failed),
        "job (complete)": url("job", jid=world.complete),
        "job (completed after a retry)": url("job", jid=retried),
        "job (depends)": url("job", jid=world.child),
        "job (needed by)": url("job", jid=world.parent),
        "job (gone: error page)": url("job", jid="no-such-job"),
        "overview (one queue)": url("overview") + "?queue=jobs",
        "search": url("search") + "?q=red",
        "search (empty)": url("search"),
        "completed": url("completed"),
        "tracked": url("tracked"),
        "tracked (gone)": url("tracked") + "?state=gone",
        "tagged": url("tagged") + "?tag=red",
        "failures": url("failures"),
        "failure group": url("failure_group", group=world.group),
        "workers": url("workers"),
        "worker": url("worker", name=world.worker),
        "worker (reporting)": url("worker", name=REPORTING),
        "worker (paused)": url("worker", name=PAUSED),
        "recurring list": url("recurring_list"),
        "recurring": url("recurring", jid=world.recurring),
        "recurring (managed)": url("recurring", jid=schedule_jid("recurapp.poll_feed")),
        "config": url("config"),
        "audit": url("audit"),
        "functions": url("functions"),  # the burst worker above counted its jobs
        "function": url("function", klass=KLASS) + "?range=24h",
        "bulk runs": url("bulk_runs"),
        "bulk choose (queue jobs, waiting)": url("bulk_choose") + "?queue=jobs&state=waiting",
        "bulk run (gone: error page)": url("bulk_run", run_id="feedfacecafebeef"),
    }


def route_of(address: str) -> str:
    """The admin route name a page address resolves to."""
    name = resolve(urlsplit(address).path).url_name or ""
    return name.removeprefix("django_qless_")


def set_mode(page: Any, mode: str) -> None:
    """Light at 1280 px, the admin's dark theme, or a 375 px wide phone (before logging in)."""
    page.emulate_media(color_scheme="dark" if mode == "dark" else "light")
    if mode != "dark":
        page.add_init_script("localStorage.setItem('theme', 'light')")
    if mode == "narrow":
        page.set_viewport_size({"width": NARROW, "height": 800})


def choose_dark_theme(page: Any) -> None:
    """Press the admin's own theme toggle until it says dark; it keeps that for every page."""
    toggle = page.locator("button.theme-toggle").first
    for _ in range(3):
        if page.evaluate("document.documentElement.dataset.theme") == "dark":
            return
        toggle.click()
    assert page.evaluate("localStorage.getItem('theme')") == "dark"


def layout_problems(page: Any) -> list[str]:
    """On a narrow screen: sideways scrolling, or a heading, the content or a button off it."""
    return list(page.evaluate(
        """(scrollers) => {
          const width = document.documentElement.clientWidth, problems = [];
          const name = (el) => el.tagName.toLowerCase() + (el.id ? `#${el.id}` : '')
            + [...el.classList].map((c) => `.${c}`).join('');
          if (document.documentElement.scrollWidth > width) {
            // Name the widest elements that overflow while their parent does not, and the
            // positioned ones (which a scroller may not clip).
            const positioned = (el) =>
              ['absolute', 'fixed'].includes(getComputedStyle(el).position);
            const wide = [...document.querySelectorAll('body *')].filter((el) =>
              el.getBoundingClientRect().right > width + 1 && (positioned(el)
                || (!el.closest(scrollers)
                    && el.parentElement.getBoundingClientRect().right <= width + 1)));
            // And text running out of its element (a long word that cannot break).
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              const range = document.createRange();
              range.selectNodeContents(node);
              if (range.getBoundingClientRect().right > width + 1
                  && !node.parentElement.closest(scrollers)
                  && getComputedStyle(node.parentElement).overflowX === 'visible')
                wide.push(node.parentElement);
            }
            problems.push(`page is ${document.documentElement.scrollWidth}px wide: `
              + wide.slice(0, 4).map(name).join(', '));
          }
          const shown = (el) => { const r = el.getBoundingClientRect();
            return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
          const main = document.querySelector('#content');
          if (!main || !shown(main)) problems.push('main content not shown');
          const checked = document.querySelectorAll(
            '#content h1, #content h2, #content .button, #content button, #content [type=submit]');
          for (const el of checked) {
            if (el.closest(scrollers) || el.closest('[hidden], details:not([open])')) continue;
            const r = el.getBoundingClientRect();
            if (!shown(el)) problems.push(`${el.tagName} "${el.textContent.trim()}" not shown`);
            else if (r.left < 0 || r.right > width + 1)
              problems.push(`${el.tagName} "${el.textContent.trim()}" off screen`
                + ` (${r.left}..${r.right})`);
          }
          return problems; }""",
        SCROLLERS,
    ))


def chart_problems(page: Any) -> list[str]:
    """Chart marks (SVG shapes with a title) under 3:1 against their panel (WCAG 1.4.11)."""
    return list(page.evaluate(
        """() => {
          const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
          const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
            .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
          const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m);
            return (x + 0.05) / (y + 0.05); };
          const behind = (el) => { for (let at = el; at; at = at.parentElement) {
            const c = rgb(getComputedStyle(at).backgroundColor);
            if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
          const problems = [];
          const marks = document.querySelectorAll(
            '#content svg :is(rect, polyline, path, circle):has(> title)');
          for (const el of marks) {
            const style = getComputedStyle(el);
            const paint = style.fill !== 'none' ? style.fill : style.stroke;
            if (!paint.startsWith('rgb')) continue;
            const contrast = ratio(rgb(paint).slice(0, 3), behind(el.ownerSVGElement));
            if (contrast < 3) problems.push(`${el.tagName}.${el.getAttribute('class')} `
              + `${paint} is ${contrast.toFixed(2)}:1 against its background`);
          }
          return [...new Set(problems)]; }"""
    ))


def check(page: Any, script: Path, label: str, mode: str, tally: axe.Tally) -> list[str]:
    """Run axe (and on narrow, the layout checks) on the loaded page; returns the problems."""
    if mode == "dark":
        theme = page.evaluate("document.documentElement.dataset.theme")
        assert theme == "dark", f"{label}: the admin's dark theme is not on ({theme!r})"
    found = axe.run(page, script, f"{label} [{mode}]")
    tally.add(found)
    problems = [str(v) for v in found if v.impact in axe.BLOCKING]
    if mode == "narrow":
        problems += [f"{label} [narrow]: {problem}" for problem in layout_problems(page)]
    else:
        problems += [f"{label} [{mode}]: {problem}" for problem in chart_problems(page)]
    return problems


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["light", "dark", "narrow"])
def test_every_admin_page_passes_axe(
    mode: str, live_server: Any, make_user: Callable[..., User], qless: Client,
    browser_page: Any, images: Path, axe_script: Path, request: pytest.FixtureRequest,
) -> None:
    world, retried = plant_everything(qless)
    audited(make_user("ops", perms=ALL_PERMS), world)
    page, base = browser_page, live_server.url
    set_mode(page, mode)
    log_in(page, base)
    if mode == "dark":
        choose_dark_theme(page)
    tally, problems, visited = axe.Tally(), [], set()
    for label, path in pages(world, retried).items():
        response = page.goto(base + path)
        assert response is not None, label
        assert response.status == (404 if "error page" in label else 200), label
        visited.add(route_of(page.url))
        problems += check(page, axe_script, label, mode, tally)
        if label == "queue (waiting)" and mode == "narrow":
            shoot(page, images, "queue-narrow")
        if label == "overview" and mode == "dark":
            shoot(page, images, "overview-dark")
    # The confirmation page, as a Cancel button on a job others depend on leads to it.
    page.goto(base + url("job", jid=world.parent))
    page.locator(".qless-actions").get_by_role("button", name="Cancel…").click()
    page.wait_for_url(f"**{url('job_cancel')}")
    assert "depend on it" in page.locator(".qless-confirm").inner_text()
    problems += check(page, axe_script, "confirm cancel", mode, tally)
    pages_of_routes = {route.name for route in ROUTES if not route.action}
    assert pages_of_routes <= visited, f"pages not checked: {pages_of_routes - visited}"
    # Shown whether or not output is captured (`-s`), like the fault suite's figures.
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\naxe-core {axe.AXE_VERSION}, {mode}: {tally.summary()}")
    assert problems == [], "\n".join(problems)


def test_admin_css_takes_every_colour_from_the_admins_variables() -> None:
    """Light and dark themes come for free only if no colour is written out."""
    found = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(ADMIN_CSS.read_text().splitlines(), 1)
        if LITERAL_COLOUR.search(line.split("/*")[0])
    ]
    assert found == []
