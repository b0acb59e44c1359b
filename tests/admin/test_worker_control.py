"""The worker page's Pause, Resume and Stop: published, audited, behind manage_queues.

A pub/sub subscription on the worker's control channel stands in for the listening worker
(tests/worker/test_control.py has real worker processes hear the same messages).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from importlib import import_module
from types import SimpleNamespace
from typing import Any

import pytest
import redis.client
from django.apps import apps as django_apps
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client as HttpClient

from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client, keys
from django_qless.core.presence import publish
from django_qless.models import PERMISSIONS
from tests.admin.conftest import messages_of, post, url
from tests.admin.test_workers_page import presence
from tests.support import wait_for

NAME = "ours-1"


@pytest.fixture
def listening(qless: Client) -> Iterator[redis.client.PubSub]:
    """A reporting worker `NAME`, subscribed to its control channel."""
    publish(qless, presence(NAME, qless.now()), ttl=30)
    pubsub = qless.redis.pubsub()  # type: ignore[no-untyped-call]
    pubsub.subscribe(keys.worker_control(NAME))
    wait_for(lambda: pubsub.get_message(timeout=0.1), what="the subscription")
    yield pubsub
    pubsub.close()


def heard(pubsub: redis.client.PubSub) -> list[dict[str, Any]]:
    """The orders the listening worker received (after a short wait for the first)."""
    orders = []
    while (message := pubsub.get_message(timeout=0.2)) is not None:
        orders.append(json.loads(message["data"]))
    return orders


def test_the_page_offers_pause_and_stop_to_a_reporting_worker(
    listening: redis.client.PubSub, operator: HttpClient, viewer: HttpClient,
) -> None:
    page = operator.get(url("worker", name=NAME)).content.decode()
    assert url("worker_control") in page
    assert 'value="pause"' in page and 'value="stop"' in page and 'value="resume"' not in page
    assert url("worker_control") not in viewer.get(url("worker", name=NAME)).content.decode()


def test_pause_publishes_the_order_and_audits_it(
    listening: redis.client.PubSub, operator: HttpClient,
) -> None:
    response = post(operator, "worker_control", {"name": NAME, "action": "pause"})
    [order] = heard(listening)
    assert order["event"] == "django_qless:control" and order["action"] == "pause"
    assert order["by"] == "operator" and order["at"] > 0
    assert messages_of(response) == [
        f"Asked worker {NAME} to pause: it pops no more jobs; the jobs it runs go on."]
    [entry] = AuditEntry.objects.all()
    assert (entry.action, entry.kind, entry.target, entry.actor) == (
        "worker_pause", "worker", NAME, "operator")
    assert entry.before == {"state": "popping"} and entry.after == {"state": "paused by operator"}


def test_a_paused_worker_shows_who_paused_it_and_offers_resume(
    qless: Client, listening: redis.client.PubSub, operator: HttpClient,
) -> None:
    publish(qless, replace(presence(NAME, qless.now()), paused_by="alice"), ttl=30)
    page = operator.get(url("worker", name=NAME)).content.decode()
    assert "paused by alice" in page and 'value="resume"' in page and 'value="pause"' not in page
    assert "paused by alice" in operator.get(url("workers")).content.decode()
    post(operator, "worker_control", {"name": NAME, "action": "resume"})
    assert [order["action"] for order in heard(listening)] == ["resume"]
    [entry] = AuditEntry.objects.all()
    assert entry.before == {"state": "paused by alice"} and entry.after == {"state": "popping"}


def test_stop_asks_first_then_publishes_and_audits(
    listening: redis.client.PubSub, operator: HttpClient,
) -> None:
    asked = operator.post(url("worker_control"), {"name": NAME, "action": "stop"})
    assert asked.status_code == 200 and "Stop worker" in asked.content.decode()
    assert 'name="confirmed" value="yes"' in asked.content.decode()
    assert heard(listening) == [] and not AuditEntry.objects.exists()
    response = post(operator, "worker_control",
                    {"name": NAME, "action": "stop", "confirmed": "yes"})
    assert [order["action"] for order in heard(listening)] == ["stop"]
    assert "hands back the rest and exits" in messages_of(response)[0]
    assert AuditEntry.objects.get().after == {"state": "stopping"}


def test_an_order_no_process_hears_says_so_and_is_not_audited(
    qless: Client, operator: HttpClient,
) -> None:
    # Listed, but only another client's worker listens, on qless's own worker channel.
    publish(qless, presence(NAME, qless.now()), ttl=30)
    theirs = qless.redis.pubsub()  # type: ignore[no-untyped-call]
    theirs.subscribe(keys.worker_channel(NAME))
    wait_for(lambda: theirs.get_message(timeout=0.1), what="the subscription")
    try:
        response = post(operator, "worker_control", {"name": NAME, "action": "pause"})
        assert theirs.get_message(timeout=0.3) is None
    finally:
        theirs.close()
    [message] = messages_of(response)
    assert "reached no one" in message and "Nothing was changed" in message
    assert not AuditEntry.objects.exists()


def test_control_needs_manage_queues(
    listening: redis.client.PubSub, viewer: HttpClient,
) -> None:
    response = viewer.post(url("worker_control"),
                           {"name": NAME, "action": "stop", "confirmed": "yes"})
    assert response.status_code == 403
    assert heard(listening) == [] and not AuditEntry.objects.exists()


def test_an_unknown_order_is_refused(
    listening: redis.client.PubSub, operator: HttpClient,
) -> None:
    post(operator, "worker_control", {"name": NAME, "action": "restart"})
    assert heard(listening) == [] and not AuditEntry.objects.exists()


@pytest.mark.django_db
def test_an_existing_database_gets_the_new_description_of_manage_queues() -> None:
    migration = import_module("django_qless.migrations.0004_manage_queues_covers_workers")
    ours = Permission.objects.filter(content_type__app_label="django_qless",
                                     codename="manage_queues")
    ours.update(name="Can pause queues, change queue settings and forget workers")
    migration.rename(django_apps, SimpleNamespace(connection=connection))
    assert ours.get().name == migration.NAME == dict(PERMISSIONS)["manage_queues"]
