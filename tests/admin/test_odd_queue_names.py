"""Queue names other qless clients can create (control characters, markup, URL syntax):
the admin lists them escaped with their control characters visible, and their links work."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import unquote

import pytest
from django.test import Client as HttpClient

from django_qless.admin.visible import visible
from django_qless.core import Client
from tests.admin.conftest import url

ODD_NAMES = (
    "line\nfeed",
    "tab\there",
    "nul\x00byte",
    "del\x7fchar",
    "cr\rreturn",
    "<b>bold</b>\nmarkup",
    "url 100%/slash?query#hash\n",
    "reversed \u202eeman",
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u202e]")
LINK = re.compile(r'<a href="([^"]*)"[^>]*>([^<]*)</a>')


def plant(client: Client, queue: str, tag: str) -> None:
    """Through the raw script, as another client would: one waiting job, one failed."""
    client.call("put", "other-client", queue, f"{tag}-wait", "Klass", "{}", 0)
    client.call("put", "other-client", queue, f"{tag}-fail", "Klass", "{}", 0, "priority", 1)
    client.call("pop", queue, "w1", 1)
    client.call("fail", f"{tag}-fail", "w1", f"{queue}-ValueError", "boom")
    client.call("recur", queue, f"{tag}-recur", "Klass", "{}", "interval", 3600, 3600)


def links_to(page: str, route: str, **kwargs: str) -> list[str]:
    """The texts of the links on `page` whose target is `route` with `kwargs`."""
    target = url(route, **kwargs)
    return [html.unescape(text) for href, text in LINK.findall(page)
            if html.unescape(href) == target]


@pytest.fixture
def odd(qless: Client) -> list[str]:
    """A plain queue and every odd one, each with a waiting and a failed job."""
    plant(qless, "plain", "plain")
    for index, name in enumerate(ODD_NAMES):
        plant(qless, name, f"odd{index}")
    return ["plain", *ODD_NAMES]


def test_the_queue_list_shows_every_name_visibly_with_a_working_link(
    viewer: HttpClient, odd: list[str]
) -> None:
    response = viewer.get(url("queues"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    for name in odd:
        # One link per queue, its text the name with control characters shown.
        texts = links_to(page, "queue", name=name)
        assert texts == [visible(name)], repr(name)
        assert not CONTROL.search(texts[0]), repr(name)
        href = url("queue", name=name)
        assert unquote(href.split("/q/", 1)[1]).removesuffix("/") == name
        queue_page = viewer.get(href)
        assert queue_page.status_code == 200, repr(name)
        assert queue_page.context["queue"].name == name
        assert queue_page.context["queue"].waiting == 1
        body = queue_page.content.decode()
        assert f"<title>Queue {html.escape(visible(name))} " in body
        assert not CONTROL.search(body.split("<body", 1)[0])  # none in the head


def test_the_failure_groups_of_odd_queues_link_to_their_pages(
    viewer: HttpClient, odd: list[str]
) -> None:
    page = viewer.get(url("failures")).content.decode()
    for name in odd:
        group = f"{name}-ValueError"
        assert links_to(page, "failure_group", group=group) == [visible(group)], repr(name)
        response = viewer.get(url("failure_group", group=group))
        assert response.status_code == 200, repr(name)


def test_a_job_page_links_back_to_its_odd_queue(
    viewer: HttpClient, odd: list[str], qless: Client
) -> None:
    for index, name in enumerate(ODD_NAMES):
        response = viewer.get(url("job", jid=f"odd{index}-wait"))
        assert response.status_code == 200
        page = response.content.decode()
        assert set(links_to(page, "queue", name=name)) == {visible(name)}, repr(name)


def test_pages_listing_queues_show_them_visibly(viewer: HttpClient, odd: list[str]) -> None:
    for route in ("overview", "recurring_list"):
        response: Any = viewer.get(url(route))
        assert response.status_code == 200, route
        page = response.content.decode()
        for name in odd:
            assert html.escape(visible(name)) in page, (route, name)
        assert not CONTROL.search(page), route


def test_control_characters_are_shown_by_a_visible_stand_in() -> None:
    shown = {
        "line\nfeed": "line\u240afeed", "tab\there": "tab\u2409here",
        "nul\x00byte": "nul\u2400byte", "del\x7fchar": "del\u2421char",
        "cr\rreturn": "cr\u240dreturn", "next\x85line": "next<U+0085>line",
        "reversed \u202eeman": "reversed <U+202E>eman", "plain é ✓": "plain é ✓",
    }
    assert {name: visible(name) for name in shown} == shown
