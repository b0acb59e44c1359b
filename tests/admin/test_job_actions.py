"""The declared job actions: each one routed, permission-checked and audited; the route table
and the buttons drawn from the same list."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.urls import resolve, reverse

from django_qless import models
from django_qless.admin import permissions, presenters
from django_qless.admin.job_actions import JOB_ACTIONS, JobAction
from django_qless.admin.routes import INDEX_ROUTES, ROUTES
from django_qless.core import Client
from tests.admin.conftest import ALL_PERMS, World, logged_in
from tests.admin.test_access import action_bodies, app_url_names

NAMES = [entry.name for entry in JOB_ACTIONS]


def codename(perm: str) -> str:
    """`django_qless.retry_jobs` -> `retry_jobs`."""
    return perm.split(".", 1)[1]


def entry_url(entry: JobAction) -> str:
    """The URL of a job action on the default connection."""
    return reverse(f"admin:django_qless_{entry.name}", kwargs={"alias": "default"})


def test_route_table_names_are_unique_and_all_registered() -> None:
    names = [route.name for route in ROUTES]
    assert len(names) == len(set(names))
    assert set(names) <= app_url_names()
    assert set(INDEX_ROUTES.values()) <= set(names)
    assert set(NAMES) <= set(names) and len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("entry", JOB_ACTIONS, ids=NAMES)
def test_every_job_action_is_routed_as_an_action(entry: JobAction) -> None:
    [route] = [route for route in ROUTES if route.name == entry.name]
    assert route.action and route.perm == entry.perm and route.section is models.Job
    path = entry_url(entry)
    assert path.endswith(f"/default/{entry.path}")
    assert resolve(path).url_name == f"django_qless_{entry.name}"


@pytest.mark.parametrize("entry", JOB_ACTIONS, ids=NAMES)
def test_every_job_action_is_refused_without_its_permission(
    entry: JobAction, world: World, make_user: Callable[..., User],
    keyspace: Callable[[], dict[str, bytes]],
) -> None:
    others = tuple(p for p in ALL_PERMS if p != codename(entry.perm))
    client = logged_in(make_user("almost", perms=others))
    before = keyspace()
    body = {**action_bodies(world)[entry.name], "confirmed": "yes"}
    assert client.post(entry_url(entry), body).status_code == 403
    assert keyspace() == before and LogEntry.objects.count() == 0


@pytest.mark.parametrize("entry", JOB_ACTIONS, ids=NAMES)
def test_every_job_action_is_audited(
    entry: JobAction, world: World, make_user: Callable[..., User],
    keyspace: Callable[[], dict[str, bytes]],
) -> None:
    client = logged_in(make_user("holder", perms=("view_qless", codename(entry.perm))))
    before = keyspace()
    body = {**action_bodies(world)[entry.name], "confirmed": "yes"}
    assert client.post(entry_url(entry), body).status_code == 302
    assert keyspace() != before
    entries = list(LogEntry.objects.all())
    assert entries, entry.name
    job_type = ContentType.objects.get_for_model(models.Job, for_concrete_model=False)
    for logged in entries:
        assert logged.content_type == job_type and logged.user.username == "holder"
        assert (logged.action_flag == DELETION) == entry.deletion
        assert logged.get_change_message().endswith("(connection 'default')")


def test_every_job_action_has_a_body_in_the_access_tests(world: World) -> None:
    assert set(NAMES) <= set(action_bodies(world))


def test_job_page_buttons_follow_state_tracking_and_permissions(
    world: World, qless: Client
) -> None:
    failed = qless.get_job(world.failed)
    assert failed is not None
    bar = presenters.job_page_actions(failed, lambda perm: True)
    assert [a.name for a in bar.actions] == [
        "job_retry", "job_track", "job_move", "job_priority", "job_tag", "job_cancel"]
    complete = qless.get_job(world.complete)
    assert complete is not None
    only_cancel = presenters.job_page_actions(complete, lambda p: p == permissions.CANCEL)
    assert only_cancel.shown and only_cancel.actions == []
    assert not presenters.job_page_actions(complete, lambda p: False).shown


def test_list_bar_groups_the_buttons_sharing_an_input() -> None:
    groups = presenters.list_actions(lambda perm: True)
    assert [(g.field, [a.name for a in g.actions]) for g in groups] == [
        ("", ["job_retry"]), ("", ["job_timeout"]), ("", ["job_cancel"]),
        ("", ["job_track"]), ("", ["job_untrack"]), ("queue", ["job_move"]),
        ("priority", ["job_priority"]), ("tags", ["job_tag", "job_untag"]),
    ]
    retry_only = presenters.list_actions(lambda perm: perm == permissions.RETRY)
    assert [a.name for g in retry_only for a in g.actions] == ["job_retry", "job_timeout"]
    assert [a.name for a in presenters.tag_actions(lambda perm: True)] == [
        "tag_retry", "tag_cancel"]
