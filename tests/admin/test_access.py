"""Who may open which URL (E1), CSRF and methods (E2), response headers (E6).

Every URL of the app is found from the resolver; each must be classified below as a page
(view permission) or an action (its own permission), so a URL nobody classified fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client as HttpClient
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client, keys
from tests.admin.conftest import ALL_PERMS, World, logged_in, plant
from tests.recurring.cron_helpers import define

PAGES = {
    "overview_changelist", "overview", "functions", "function",
    "queue_changelist", "queues", "queue",
    "job_changelist", "search", "job", "completed", "tracked", "tagged",
    "failure_changelist", "failures", "failure_group",
    "worker_changelist", "workers", "worker",
    "recurringjob_changelist", "recurring_list", "recurring",
    "config_changelist", "config",
    "auditentry_changelist", "audit",
    "bulk_runs", "bulk_choose", "bulk_run",
}
#: Pages that need a permission besides view_qless.
PAGE_PERMS = {"auditentry_changelist": "view_audit", "audit": "view_audit"}
ACTIONS = {
    "queue_pause": "manage_queues", "queue_unpause": "manage_queues",
    "queue_settings": "manage_queues", "worker_forget": "manage_queues",
    "worker_control": "manage_queues", "queue_latency_threshold": "manage_queues",
    "job_retry": "retry_jobs", "job_timeout": "retry_jobs", "tag_retry": "retry_jobs",
    "failure_retry": "retry_jobs", "failure_retry_all": "retry_jobs",
    "job_cancel": "cancel_jobs", "tag_cancel": "cancel_jobs", "failure_cancel": "cancel_jobs",
    "job_move": "edit_jobs", "job_priority": "edit_jobs", "job_tag": "edit_jobs",
    "job_untag": "edit_jobs", "job_track": "edit_jobs", "job_untrack": "edit_jobs",
    "job_undepend": "edit_jobs",
    "recurring_update": "manage_recurring", "recurring_delete": "manage_recurring",
    "recurring_cron_run": "manage_recurring", "recurring_run": "manage_recurring",
    "config_set": "manage_config", "config_unset": "manage_config",
    # Each bulk run needs the permission of the single action it runs (test_bulk_all.py);
    # a view-only user holds none of them.
    "bulk_start": "retry_jobs", "bulk_step": "retry_jobs", "bulk_abandon": "retry_jobs",
}
#: Pages of something the planted world does not hold: found by the view, not by the URL.
NOT_FOUND_PAGES = {"bulk_run"}
METHODS = ("get", "head", "post", "put", "delete")


def app_url_names() -> set[str]:
    """Names (without the `django_qless_` prefix) of every admin URL of the app."""

    def walk(patterns: list[Any]) -> Iterator[str]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield pattern.name

    admin = next(
        p for p in get_resolver().url_patterns
        if isinstance(p, URLResolver) and p.namespace == "admin"
    )
    prefix = "django_qless_"
    return {name[len(prefix):] for name in walk(admin.url_patterns) if name.startswith(prefix)}


def kwargs_for(name: str, world: World) -> dict[str, str]:
    """URL arguments naming real things of the planted world."""
    if name.endswith("_changelist"):
        return {}
    values = {
        "queue": {"name": "jobs"}, "job": {"jid": world.failed},
        "failure_group": {"group": world.group}, "worker": {"name": world.worker},
        "recurring": {"jid": world.recurring}, "function": {"klass": "tests.testapp.add"},
        "bulk_run": {"run_id": "feedfacecafebeef"},
    }
    return {"alias": "default", **values.get(name, {})}


def app_url(name: str, world: World) -> str:
    """The URL of a classified name, with real arguments."""
    return reverse(f"admin:django_qless_{name}", kwargs=kwargs_for(name, world))


def test_every_url_is_classified() -> None:
    found = app_url_names()
    assert found - PAGES - set(ACTIONS) == set(), "classify the new URL(s) in this test"
    assert (PAGES | set(ACTIONS)) - found == set(), "a classified URL no longer exists"
    assert len(found) == len(PAGES) + len(ACTIONS) == 59


def send(client: HttpClient, method: str, path: str) -> Any:
    """One request, with an empty form body for POST/PUT."""
    return getattr(client, method)(path)


USERS: dict[str, dict[str, Any]] = {
    "anonymous": {},
    "active non-staff with every permission": {"staff": False, "perms": ALL_PERMS},
    "staff without permissions": {"perms": ()},
    "staff, view only": {"perms": ("view_qless",)},
    "staff with every qless permission": {"perms": ALL_PERMS},
    "superuser": {"superuser": True},
}


def expected(user: str, name: str, method: str) -> set[int]:
    """The statuses E1 allows for one user, URL and method."""
    if user in ("anonymous", "active non-staff with every permission"):
        return {302}
    is_action = name in ACTIONS
    if method not in (("post",) if is_action else ("get", "head")):
        return {405}
    own_perm = is_action or name in PAGE_PERMS
    if user == "staff without permissions" or (user == "staff, view only" and own_perm):
        return {403}
    # An empty action form is refused: a redirect with a message, or the form re-shown.
    return {200, 302} if is_action else {404} if name in NOT_FOUND_PAGES else {200}


@pytest.mark.parametrize("user", USERS)
def test_access_matrix(
    user: str, world: World, make_user: Callable[..., User]
) -> None:
    account = None if user == "anonymous" else make_user("u", **USERS[user])
    client = logged_in(account)
    problems = []
    for name in sorted(PAGES | set(ACTIONS)):
        path = app_url(name, world)
        for method in METHODS:
            response = send(client, method, path)
            if response.status_code not in expected(user, name, method):
                problems.append((name, method, response.status_code))
            elif expected(user, name, method) == {302}:
                assert response["Location"].startswith("/admin/login/?next="), (name, method)
    assert problems == []


def test_the_index_shows_the_section_to_viewers_only(
    world: World, make_user: Callable[..., User]
) -> None:
    viewer = logged_in(make_user("viewer", perms=("view_qless",)))
    page = viewer.get("/admin/").content.decode()
    assert "/admin/django_qless/" in page and "/admin/django_qless/overview/" in page
    other = logged_in(make_user("nobody", perms=()))
    assert "/admin/django_qless/" not in other.get("/admin/").content.decode()


def test_app_index_lists_the_pages(world: World, viewer: HttpClient) -> None:
    page = viewer.get("/admin/django_qless/").content.decode()
    for model in ("overview", "queue", "job", "failure", "worker", "recurringjob", "config"):
        assert f"/admin/django_qless/{model}/" in page
    # The audit log needs its own permission.
    assert "/admin/django_qless/auditentry/" not in page


def test_app_index_lists_the_audit_log_to_its_viewers(world: World, operator: HttpClient) -> None:
    page = operator.get("/admin/django_qless/").content.decode()
    assert "/admin/django_qless/auditentry/" in page and "Audit log" in page


def action_bodies(world: World) -> dict[str, dict[str, Any]]:
    """A POST body for each action that would change something if it were accepted."""
    jids = {"jids": [world.waiting]}
    return {
        "queue_pause": {"queue": "jobs"}, "queue_unpause": {"queue": "jobs"},
        "queue_settings": {"queue": "jobs", "heartbeat": "30", "max_concurrency": "2"},
        "worker_forget": {"name": world.worker},
        "queue_latency_threshold": {"queue": "jobs", "threshold": "60"},
        "worker_control": {"name": world.worker, "action": "stop", "confirmed": "yes"},
        "job_retry": {"jids": [world.failed]}, "job_timeout": {"jids": [world.running]},
        "tag_retry": {"tag": "red"}, "failure_retry": {"group": world.group},
        "failure_retry_all": {"confirmed": "yes"},
        "job_cancel": {**jids, "confirmed": "yes"},
        "tag_cancel": {"tag": "red", "confirmed": "yes"},
        "failure_cancel": {"group": world.group, "confirmed": "yes"},
        "job_move": {**jids, "queue": "elsewhere"}, "job_priority": {**jids, "priority": "9"},
        "job_tag": {**jids, "tags": "blue"}, "job_untag": {**jids, "tags": "red"},
        "job_track": {"jids": [world.scheduled]}, "job_untrack": jids,
        "job_undepend": {"jid": world.child, "dependency": world.parent},
        "recurring_update": {"jid": world.recurring, "queue": "jobs", "interval": "5",
                             "priority": "1",
                             "retries": "1", "backlog": "1", "tags": "", "data_json": ""},
        "recurring_delete": {"jid": world.recurring, "confirmed": "yes"},
        "recurring_cron_run": {"name": "nightly", "confirmed": "yes"},
        "recurring_run": {"jid": world.recurring, "confirmed": "yes"},
        "config_set": {"key": "heartbeat", "value": "30"}, "config_unset": {"key": "application"},
        "bulk_start": BULK_START,
        # The run is started first by the test that posts these with a token.
        "bulk_step": {"run": "feedfacecafebeef", "confirmed": "yes"},
        "bulk_abandon": {"run": "feedfacecafebeef"},
    }


BULK_START = {"action": "retry", "f_state": "failed", "f_group": "broken-ValueError"}
#: Actions that change no job (the run they start or stop records who did it).
UNAUDITED = {"bulk_start", "bulk_abandon"}


def test_actions_without_csrf_token_change_nothing(
    world: World, make_user: Callable[..., User], keyspace: Callable[[], dict[str, bytes]]
) -> None:
    client = logged_in(make_user("root", superuser=True), enforce_csrf_checks=True)
    before = keyspace()
    bodies = action_bodies(world)
    assert set(bodies) == set(ACTIONS)
    for name, body in bodies.items():
        path = app_url(name, world)
        assert client.post(path, body).status_code == 403, name
        assert client.get(path, body).status_code == 405, name
    assert keyspace() == before
    assert LogEntry.objects.count() == 0


def test_the_same_posts_with_a_token_do_change_things(
    qless: Client, redis_client: redis.Redis, make_user: Callable[..., User],
    keyspace: Callable[[], dict[str, bytes]],
) -> None:
    """Control for the CSRF test: each of its bodies is a real change once the token is there."""
    client = logged_in(make_user("root", superuser=True))
    for name in ACTIONS:
        redis_client.flushall()
        world = plant(qless)
        if name == "queue_unpause":
            qless.queue("jobs").pause()
        if name == "config_unset":
            qless.config.set("application", "shop")
        if name == "recurring_cron_run":
            define(qless, "0 3 * * *", name="nightly")
        if name == "worker_forget":  # only a worker that stopped reporting can be forgotten
            redis_client.zadd("ql:workers", {world.worker: qless.now() - 7200})
        if name == "worker_control":  # a worker listening: an order changes no key
            listener = redis_client.pubsub()  # type: ignore[no-untyped-call]
            listener.subscribe(keys.worker_control(world.worker))
            assert listener.get_message(timeout=5)["type"] == "subscribe"
        body = action_bodies(world)[name]
        if name in ("bulk_step", "bulk_abandon"):  # a run ready for its confirmation
            started = client.post(app_url("bulk_start", world), BULK_START)
            body = {**body, "run": started["Location"].rstrip("/").rsplit("/", 1)[1]}
        before, audited = keyspace(), AuditEntry.objects.count()
        response = client.post(app_url(name, world), body)
        assert response.status_code == 302, name
        if name == "worker_control":
            order = listener.get_message(timeout=5)
            listener.close()
            assert order is not None and '"action": "stop"' in str(order["data"]), name
        else:
            assert keyspace() != before, name
        if name not in UNAUDITED:
            assert AuditEntry.objects.count() > audited, f"{name} is not in the audit log"
    assert LogEntry.objects.count() >= len(set(ACTIONS) - UNAUDITED)


def test_pages_deny_framing_and_caching(world: World, operator: HttpClient) -> None:
    for name in sorted(PAGES):
        response = operator.get(app_url(name, world))
        assert response.status_code == (404 if name in NOT_FOUND_PAGES else 200), name
        assert response["X-Frame-Options"] == "DENY", name
        cache = response["Cache-Control"]
        assert {"no-cache", "no-store", "private"} <= {p.strip() for p in cache.split(",")}, name


def test_actions_deny_framing_and_caching(world: World, operator: HttpClient) -> None:
    response = operator.post(app_url("queue_pause", world), {"queue": "jobs"})
    assert response.status_code == 302
    assert response["X-Frame-Options"] == "DENY"
    assert "no-store" in response["Cache-Control"]


def test_unknown_connection_alias_is_404(world: World, viewer: HttpClient) -> None:
    path = reverse("admin:django_qless_overview", kwargs={"alias": "nope"})
    assert viewer.get(path).status_code == 404
