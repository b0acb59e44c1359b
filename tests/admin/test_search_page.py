"""The search page through Django's test client: criteria, paging, bad input, permissions."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.admin.views.search import MAX_BACK
from django_qless.core import Client
from tests.admin.conftest import KLASS, World, logged_in, url

OTHER = "tests.testapp.qless_jobs.other"


def search(client: HttpClient, **criteria: Any) -> Any:
    """GET the search page with `criteria` as its query string."""
    return client.get(url("search"), criteria)


def jids_of(response: Any) -> list[str]:
    """The jids of the job rows a response shows, in order."""
    return [row.job.jid for row in response.context["page"].items]


def follow(client: HttpClient, query: str) -> Any:
    """GET the search page with a link's query string."""
    return client.get(url("search") + "?" + query)


def test_the_form_offers_every_criterion(world: World, viewer: HttpClient) -> None:
    page = search(viewer).content.decode()
    for name in ("queue", "state", "klass", "tag", "jid_prefix", "worker", "group", "since",
                 "until"):
        assert f'name="{name}"' in page, name
    assert 'name="data_contains"' not in page  # the viewer may not read job data
    assert '<option value="broken">broken</option>' in page
    assert '<option value="stalled">stalled</option>' in page
    assert f'<option value="{KLASS}">' in page  # registered klasses are offered
    assert 'type="datetime-local"' in page
    assert "walk" not in search(viewer).context  # an empty form searches nothing


def test_klass_and_state_find_the_matching_jobs(qless: Client, viewer: HttpClient) -> None:
    for n in range(6):
        qless.queue("q").put(KLASS if n % 2 else OTHER, {}, jid=f"k-{n}", priority=-n)
    qless.queue("q").pop()  # k-0 (OTHER) runs
    response = search(viewer, klass=OTHER, state="waiting")
    assert response.status_code == 200
    assert jids_of(response) == ["k-2", "k-4"]
    status = html.unescape(re.sub(r"<[^>]+>", "", response.content.decode()))
    assert f"Jobs with state waiting, klass {OTHER}: looked at 5 of 5 candidates (all of them)" \
        ", 2 found on this page." in status
    assert "Look further" not in status


def test_pages_go_on_with_the_cursor_and_back(qless: Client, viewer: HttpClient) -> None:
    for n in range(60):
        qless.queue("q").put(KLASS, {}, jid=f"p-{n:02d}", priority=-n)
    first = search(viewer, queue="q", klass=KLASS)
    assert jids_of(first) == [f"p-{n:02d}" for n in range(25)]
    assert first.context["page"].has_next and not first.context["page"].has_previous
    second = follow(viewer, first.context["page"].next_query)
    assert jids_of(second) == [f"p-{n:02d}" for n in range(25, 50)]
    assert second.context["page"].number == 2
    third = follow(viewer, second.context["page"].next_query)
    assert jids_of(third) == [f"p-{n:02d}" for n in range(50, 60)]
    assert third.context["walk"].done and not third.context["page"].has_next
    assert third.context["walk"].looked == 60
    back = follow(viewer, third.context["page"].previous_query)
    assert jids_of(back) == jids_of(second)
    assert jids_of(follow(viewer, back.context["page"].previous_query)) == jids_of(first)


def test_a_long_walk_stops_and_offers_to_look_further(
    qless: Client, viewer: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_qless.admin.search_results.MAX_STEPS", 2)
    monkeypatch.setattr("django_qless.admin.filter_walk.BUDGET", 10)
    for n in range(50):
        qless.queue("q").put(OTHER if n < 45 else KLASS, {}, jid=f"l-{n:02d}", priority=-n)
    response = search(viewer, klass=KLASS)
    assert jids_of(response) == [] and response.context["walk"].looked == 20
    page = response.content.decode()
    assert "looked at 20 of 50 candidates, 0 found on this page." in page
    further = re.search(r'<a href="\?([^"]+)" class="qless-look-further">Look further</a>', page)
    assert further is not None
    on = follow(viewer, html.unescape(further.group(1)))
    assert on.context["walk"].looked == 40 and jids_of(on) == []
    last = follow(viewer, on.context["page"].next_query)
    assert jids_of(last) == [f"l-{n:02d}" for n in range(45, 50)] and last.context["walk"].done


def test_the_time_range_takes_datetime_local_values(qless: Client, viewer: HttpClient) -> None:
    now = qless.now()
    Client(qless.redis, clock=lambda: now - 7200).queue("q").put(KLASS, {}, jid="old")
    qless.queue("q").put(KLASS, {}, jid="new")
    response = search(viewer, queue="q", since="2001-01-01T00:00", until=_local(now - 3600))
    assert jids_of(response) == ["old"]
    assert response.context["form"]["since"] == "2001-01-01T00:00"
    assert jids_of(search(viewer, queue="q", since=str(now - 60))) == ["new"]


def _local(seconds: float) -> str:
    """A datetime-local value (the test settings' time zone is UTC)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ({"queue": "q", "since": "yesterday"}, "From must be a date and time like"),
        ({"queue": "q", "until": "nan"}, "To must be a date and time"),
        ({"state": "asleep"}, "unknown state &#x27;asleep&#x27;"),
        ({"queue": "q", "state": "complete"}, "completed jobs keep no queue"),
        ({"queue": "q", "cursor": "w1.0"}, "not a search cursor"),
        ({"since": "2030-01-02T00:00", "until": "2030-01-01T00:00"}, "ends before it starts"),
    ],
)
def test_bad_input_gets_a_clear_message_and_no_results(
    world: World, viewer: HttpClient, criteria: dict[str, str], message: str
) -> None:
    response = search(viewer, **criteria)
    assert response.status_code == 400
    page = response.content.decode()
    assert '<p class="errornote" role="alert">' in page and message in page
    assert "walk" not in response.context


def test_searching_job_data_needs_the_data_permission(
    world: World, viewer: HttpClient, operator: HttpClient
) -> None:
    refused = search(viewer, data_contains="args")
    assert refused.status_code == 400
    assert "needs the view_job_data permission" in refused.content.decode()
    allowed = search(operator, data_contains='"password"')
    assert allowed.status_code == 200 and jids_of(allowed) == [world.waiting]
    assert jids_of(search(operator, data_contains="hunter2")) == []  # masked: no guessing


def test_only_users_with_the_view_permission_search(
    world: World, make_user: Callable[..., User]
) -> None:
    stranger = logged_in(make_user("stranger", perms=()))
    assert search(stranger, klass=KLASS).status_code == 403
    assert search(logged_in(None), klass=KLASS).status_code == 302  # to the login page


def test_the_top_bar_leads_to_a_jid_prefix_search(world: World, viewer: HttpClient) -> None:
    response = viewer.get(url("search"), {"q": world.running[:10]}, follow=True)
    assert jids_of(response) == [world.running]
    assert response.context["form"]["jid_prefix"] == world.running[:10]


def test_a_tag_search_links_to_the_tag_page_and_its_actions(
    world: World, viewer: HttpClient
) -> None:
    response = search(viewer, tag="red")
    assert set(jids_of(response)) == {world.waiting, world.scheduled, world.failed}
    assert f'<a href="{url("tagged")}?tag=red">Every job tagged red' in response.content.decode()


def test_odd_values_are_shown_as_text(qless: Client, viewer: HttpClient) -> None:
    evil = '<script>alert("k")</script>'
    qless.queue("q").put(evil, {}, jid="odd-1", tags=['"><img src=x onerror=alert(1)>'])
    page = search(viewer, klass=evil, tag='"><img src=x onerror=alert(1)>').content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;k&quot;)&lt;/script&gt;" in page
    assert "odd-1" in page


def test_previous_links_keep_a_bounded_trail(qless: Client, viewer: HttpClient) -> None:
    qless.queue("q").put(KLASS, {}, jid="only")
    trail = {"back": [f"w1.0.{n}.1.{n}" for n in range(MAX_BACK + 10)], "queue": "q"}
    response = viewer.get(url("search"), trail)
    assert response.context["page"].number == MAX_BACK + 1
    carried = parse_qs(urlparse("?" + response.context["page"].previous_query).query)["back"]
    assert len(carried) == MAX_BACK - 1
