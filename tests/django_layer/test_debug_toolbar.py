"""The debug toolbar's qless panel: the jobs a request enqueued, with their admin links."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import AsyncClient as AsyncHttpClient
from django.test import Client as HttpClient
from django.test import override_settings

from django_qless import signals
from django_qless.core import Client
from django_qless.enqueue import observers
from tests.django_layer import toolbar_views

pytestmark = pytest.mark.django_db(transaction=True)

PANEL = "django_qless.integrations.debug_toolbar.QlessJobsPanel"


def toolbar_settings(panels: list[str]) -> dict[str, Any]:
    """The toolbar installed, shown on every request with its panels rendered in the page."""
    from django.conf import settings  # noqa: PLC0415 - read when a test starts

    return {
        "INSTALLED_APPS": [*settings.INSTALLED_APPS, "debug_toolbar"],
        "MIDDLEWARE": ["debug_toolbar.middleware.DebugToolbarMiddleware", *settings.MIDDLEWARE],
        "ROOT_URLCONF": "tests.django_layer.toolbar_urls",
        "DEBUG_TOOLBAR_PANELS": panels,
        "DEBUG_TOOLBAR_CONFIG": {
            "SHOW_TOOLBAR_CALLBACK": lambda request: True,
            "IS_RUNNING_TESTS": False,
            "RENDER_PANELS": True,
        },
    }


@pytest.fixture
def toolbar() -> Iterator[None]:
    """The toolbar with the qless panel (and the toolbar's own Tasks panel beside it)."""
    with override_settings(**toolbar_settings(["debug_toolbar.panels.tasks.TasksPanel", PANEL])):
        yield


@pytest.fixture
def without_panel() -> Iterator[None]:
    """The toolbar with its Tasks panel only."""
    with override_settings(**toolbar_settings(["debug_toolbar.panels.tasks.TasksPanel"])):
        yield


def panel_html(page: str) -> str:
    """The qless panel's content in a rendered page."""
    match = re.search(r'id="QlessJobsPanel".*?<div class="djDebugPanelContent">(.*?)</div>\s*'
                      r"</div>\s*</div>", page, re.S)
    assert match is not None, "no qless panel in the page"
    return match.group(1)


def rows(panel: str) -> list[str]:
    """The table rows of the panel's body, one string each."""
    return re.findall(r"<tr>(.*?)</tr>", panel.split("<tbody>", 1)[-1], re.S)


def cells(row: str) -> list[str]:
    """The cells of one row, their markup left in (links, code)."""
    return [cell.strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]


def get(path: str) -> str:
    """The page at `path`, with the toolbar in it."""
    response = HttpClient().get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_single_enqueues_are_listed_with_links_to_the_admin(toolbar: None, qless: Client) -> None:
    panel = panel_html(get("/single/"))
    welcome, delayed = toolbar_views.ENQUEUED["single"]
    assert qless.get_job(welcome) is not None
    first, second = (cells(row) for row in rows(panel))
    klass, queue, job, sent, delay, priority, tags, put = first
    assert klass == "<code>tests.testapp.qless_jobs.send_welcome</code>"
    assert queue == "emails"
    assert job == (f'<a href="/admin/django_qless/job/default/j/{welcome}/">'
                   f"<code>{welcome}</code></a>")
    assert (sent, delay, priority, tags) == ("put now", "—", "10", "mail, welcome")
    assert re.fullmatch(r"put at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", put)
    assert f'href="/admin/django_qless/job/default/j/{delayed}/"' in second[2]
    assert second[4] == "30 s"


def test_bulk_enqueues_are_listed_one_row_per_job(toolbar: None) -> None:
    panel = panel_html(get("/bulk/"))
    jids = toolbar_views.ENQUEUED["bulk"]
    listed = rows(panel)
    assert len(listed) == 3
    for jid, row in zip(jids, listed, strict=True):
        assert f"/j/{jid}/" in row
        assert "bulk of 3" in row and "put at" in row


@pytest.mark.parametrize(("outbox", "route"), [(True, "outbox, on commit"), (False, "on commit")])
def test_deferred_enqueues_say_whether_the_commit_put_them(
    toolbar: None, settings: Any, qless_settings: dict[str, Any], qless: Client,
    outbox: bool, route: str,
) -> None:
    settings.QLESS = {**qless_settings, "OUTBOX": outbox}
    panel = panel_html(get("/atomic/"))
    committed, rolled_back = toolbar_views.ENQUEUED["atomic"]
    assert qless.get_job(committed) is not None
    assert qless.get_job(rolled_back) is None
    put, dropped = rows(panel)
    assert f"/j/{committed}/" in put and route in put
    assert re.search(r"put at [\d: .-]+, \d+ ms after", put)
    assert f"/j/{rolled_back}/" in dropped and "not put during the request" in dropped


def test_the_panel_stops_listening_after_the_request(toolbar: None) -> None:
    before = len(signals.job_enqueued.receivers)
    get("/single/")
    assert observers.LISTENERS == []
    assert len(signals.job_enqueued.receivers) == before


def test_without_the_panel_nothing_listens(without_panel: None) -> None:
    receivers = len(signals.job_enqueued.receivers)
    toolbar_views.LISTENING.clear()
    page = get("/single/")
    assert "djDebug" in page  # the toolbar itself was there
    assert "QlessJobsPanel" not in page
    assert toolbar_views.LISTENING == {"single": 0}
    assert len(signals.job_enqueued.receivers) == receivers


def test_a_disabled_panel_records_nothing(toolbar: None) -> None:
    toolbar_views.LISTENING.clear()
    client = HttpClient()
    client.cookies["djdtQlessJobsPanel"] = "off"  # the toolbar's own switch for a panel
    client.get("/single/")
    assert toolbar_views.LISTENING == {"single": 0}


def test_with_the_panel_the_view_is_listened_to(toolbar: None) -> None:
    toolbar_views.LISTENING.clear()
    get("/single/")
    assert toolbar_views.LISTENING == {"single": 1}


def test_an_asgi_request_lists_its_jobs_too(toolbar: None, qless: Client) -> None:
    response = asyncio.run(AsyncHttpClient().get("/atomic/"))
    assert response.status_code == 200
    committed, rolled_back = toolbar_views.ENQUEUED["atomic"]
    put, dropped = rows(panel_html(response.content.decode()))
    assert f"/j/{committed}/" in put and "put at" in put
    assert f"/j/{rolled_back}/" in dropped and "not put during the request" in dropped
    assert observers.LISTENERS == []
