"""A job of klass "" (put by another client, e.g. the Ruby gem for an anonymous class):
every admin page that shows it answers, and an action Python refuses says why."""

from __future__ import annotations

import html

from django.test import Client as HttpClient

from django_qless.core import Client
from tests.admin.conftest import messages_of, post, url


def plant(client: Client) -> None:
    """One waiting and one failed job of klass "", through the raw script."""
    client.call("put", "ruby", "anon", "anon-wait", "", "{}", 0)
    client.call("put", "ruby", "anon", "anon-fail", "", "{}", 0, "priority", 1)
    client.call("pop", "anon", "w1", 1)
    client.call("fail", "anon-fail", "w1", "anon-UnknownJobError", "no klass")


def test_pages_showing_a_job_of_empty_klass_answer(qless: Client, viewer: HttpClient) -> None:
    plant(qless)
    for route, kwargs in (("job", {"jid": "anon-wait"}), ("job", {"jid": "anon-fail"}),
                          ("queue", {"name": "anon"}), ("failures", {}),
                          ("failure_group", {"group": "anon-UnknownJobError"}),
                          ("overview", {}), ("search", {})):
        response = viewer.get(url(route, **kwargs))
        assert response.status_code == 200, (route, kwargs)
    failures = viewer.get(url("failures")).content.decode()
    # The newest failure links to its job; an empty klass as its text would be invisible.
    job_link = html.escape(url("job", jid="anon-fail"))
    assert f'<a href="{job_link}">—</a>' in failures


def test_retrying_it_is_refused_with_a_message(qless: Client, operator: HttpClient) -> None:
    plant(qless)
    response = post(operator, "job_retry", {"jids": ["anon-fail"]})
    assert any("klass" in message for message in messages_of(response))
    job = qless.get_job("anon-fail")
    assert job is not None and job.state == "failed"
