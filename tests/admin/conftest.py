"""Fixtures for the admin pages: QLESS on the suite's server (two connections), users, data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.test import Client as HttpClient
from django.urls import reverse

from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from tests.redis_harness import RedisServer

ALL_PERMS = (
    "view_qless", "view_job_data", "retry_jobs", "cancel_jobs", "edit_jobs",
    "manage_queues", "manage_recurring", "manage_config", "view_audit",
)
KLASS = "tests.testapp.qless_jobs.add"


def url(route: str, /, alias: str = "default", **kwargs: str) -> str:
    """An admin URL of the app on a connection."""
    return reverse(f"admin:django_qless_{route}", kwargs={"alias": alias, **kwargs})


def messages_of(response: Any) -> list[str]:
    """The messages shown on the page a redirect led to."""
    return [str(m) for m in response.context["messages"]]


def post(client: HttpClient, route: str, body: dict[str, Any]) -> Any:
    """POST an action and follow its redirect."""
    response = client.post(url(route), body, follow=True)
    assert response.status_code == 200
    return response


@pytest.fixture(autouse=True)
def qless_settings(
    settings: Any, redis_client: redis.Redis, redis_server: RedisServer
) -> Iterator[dict[str, Any]]:
    """QLESS on the suite's flushed server: "default" on db 0 and "other" on db 1."""
    settings.QLESS = {
        "URL": redis_server.url,
        "CONNECTIONS": {"other": {"URL": f"redis://127.0.0.1:{redis_server.port}/1"}},
    }
    yield settings.QLESS
    reset_clients()


@pytest.fixture
def qless(qless_settings: dict[str, Any]) -> Client:
    """The default connection's client."""
    return get_client()


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    """`make_user(name, perms=(...), staff=True, superuser=False)`."""

    def make(
        name: str, *, perms: tuple[str, ...] = (), staff: bool = True, superuser: bool = False
    ) -> User:
        user = User.objects.create_user(name, password="pw", is_staff=staff)
        user.is_superuser = superuser
        user.save()
        found = Permission.objects.filter(
            content_type__app_label="django_qless", codename__in=perms
        )
        assert found.count() == len(perms), "unknown permission in the test"
        user.user_permissions.set(found)
        return user

    return make


def logged_in(user: User | None, **kwargs: Any) -> HttpClient:
    """A test HTTP client with `user` logged in (anonymous for None)."""
    client = HttpClient(**kwargs)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def viewer(make_user: Callable[..., User]) -> HttpClient:
    """Staff with the view permission only."""
    return logged_in(make_user("viewer", perms=("view_qless",)))


@pytest.fixture
def operator(make_user: Callable[..., User]) -> HttpClient:
    """Staff with every qless permission."""
    return logged_in(make_user("operator", perms=ALL_PERMS))


@dataclass
class World:
    """Jobs in every state, planted through the core client."""

    waiting: str
    scheduled: str
    parent: str
    child: str
    running: str
    failed: str
    complete: str
    recurring: str
    worker: str
    group: str


def plant(client: Client) -> World:
    """One job in each state, a recurring job, a tracked and tagged job, a failure group."""
    data = {"args": [1, 2], "kwargs": {}}
    waiting = client.queue("jobs").put(KLASS, {**data, "password": "hunter2"}, tags=["red"])
    client.track(waiting)
    scheduled = client.queue("jobs").put(KLASS, data, delay=3600, tags=["red"])
    parent = client.queue("jobs").put(KLASS, data, priority=5)
    child = client.queue("jobs").put(KLASS, data, depends=[parent])
    running = client.queue("busy").put(KLASS, data)
    client.queue("busy").pop()
    failed = client.queue("broken").put(KLASS, data, tags=["red"])
    client.queue("broken").pop()[0].fail("broken-ValueError", "Traceback\nValueError: boom")
    complete = client.queue("done").put(KLASS, data)
    client.queue("done").pop()[0].complete()
    recurring = client.queue("jobs").recur(KLASS, {"token": "t0ps3cret"}, 60, jid="every-minute")
    return World(
        waiting=waiting, scheduled=scheduled, parent=parent, child=child, running=running,
        failed=failed, complete=complete, recurring=recurring, worker=client.worker_name,
        group="broken-ValueError",
    )


@pytest.fixture
def world(qless: Client) -> World:
    """Jobs in every state on the default connection."""
    return plant(qless)
