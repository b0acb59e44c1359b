"""The audit page: every admin action audited with its values, filters, pages, permission."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client as HttpClient

from django_qless.admin import audit
from django_qless.admin.views.audit import AuditFilterForm, filtered
from django_qless.audit_log.models import TARGET_CHARS, AuditEntry, Kind
from tests.admin.conftest import ALL_PERMS, World, logged_in, post, url

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def only_entry() -> AuditEntry:
    """The one audit entry written."""
    [entry] = AuditEntry.objects.all()
    return entry


def write(user: User, *changes: audit.Change, alias: str = "default") -> None:
    """Audit changes as `user` through the public call."""
    audit.record_as(user, alias, changes)


def change(action: str = "priority", target: str = "j1", **kwargs: Any) -> audit.Change:
    """A job change with values."""
    values = {"before": {"priority": 0}, "after": {"priority": 5}, **kwargs}
    return audit.Change(action, values.pop("kind", Kind.JOB), target, f"{action} {target}",
                        **values)


def test_a_priority_change_is_on_the_page_with_its_values(
    world: World, operator: HttpClient
) -> None:
    post(operator, "job_priority", {"jids": [world.waiting], "priority": "9"})
    entry = only_entry()
    assert (entry.actor, entry.action, entry.kind, entry.target, entry.connection) == (
        "operator", "priority", "job", world.waiting, "default")
    assert (entry.before, entry.after) == ({"priority": 0}, {"priority": 9})
    # Django's "Recent actions" still has it.
    assert LogEntry.objects.get().object_id == world.waiting
    page = operator.get(url("audit")).content.decode()
    assert '<span class="qless-before">0</span> → <span class="qless-after">9</span>' in page
    assert f'href="{url("job", jid=world.waiting)}" class="qless-audit-target"' in page
    assert ">Priority</td>" in page and "?actor=operator" in page


ACTION_VALUES: list[tuple[str, Callable[[World], dict[str, Any]], str, dict[str, Any],
                          dict[str, Any]]] = [
    ("job_retry", lambda w: {"jids": [w.failed]}, "retry",
     {"state": "failed", "queue": "broken"}, {"state": "waiting", "queue": "broken"}),
    ("job_timeout", lambda w: {"jids": [w.running]}, "timeout",
     {"state": "running"}, {"state": "stalled"}),
    ("job_cancel", lambda w: {"jids": [w.scheduled], "confirmed": "yes"}, "cancel",
     {"state": "scheduled", "queue": "jobs"}, {"state": "cancelled"}),
    ("job_move", lambda w: {"jids": [w.waiting], "queue": "elsewhere"}, "move",
     {"queue": "jobs"}, {"queue": "elsewhere"}),
    ("job_tag", lambda w: {"jids": [w.waiting], "tags": "blue"}, "tag",
     {"tags": ["red"]}, {"tags": ["blue", "red"]}),
    ("job_untag", lambda w: {"jids": [w.waiting], "tags": "red"}, "untag",
     {"tags": ["red"]}, {"tags": []}),
    ("job_track", lambda w: {"jids": [w.scheduled]}, "track",
     {"tracked": False}, {"tracked": True}),
    ("job_untrack", lambda w: {"jids": [w.waiting]}, "untrack",
     {"tracked": True}, {"tracked": False}),
    ("job_undepend", lambda w: {"jid": w.child, "dependency": w.parent}, "undepend",
     {"state": "depends"}, {"state": "waiting", "dependencies": []}),
    ("queue_pause", lambda w: {"queue": "jobs"}, "pause", {"paused": False}, {"paused": True}),
    ("queue_settings", lambda w: {"queue": "jobs", "heartbeat": "30", "max_concurrency": "2"},
     "queue_settings", {"heartbeat": None, "max concurrency": None},
     {"heartbeat": 30, "max concurrency": 2}),
    ("config_set", lambda w: {"key": "heartbeat", "value": "30"}, "config_set",
     {"heartbeat": "60"}, {"heartbeat": 30}),
    ("recurring_update", lambda w: {
        "jid": w.recurring, "queue": "jobs", "interval": "5", "priority": "0", "retries": "5",
        "backlog": "0", "tags": "nightly", "data_json": ""}, "recurring_update",
     {"interval": 60, "tags": []}, {"interval": 5, "tags": ["nightly"]}),
    ("failure_retry", lambda w: {"group": w.group}, "group_retry",
     {"failed jobs": 1}, {"failed jobs": 0}),
]


@pytest.mark.parametrize(("route", "body", "action", "before", "after"), ACTION_VALUES,
                         ids=[row[0] for row in ACTION_VALUES])
def test_each_action_records_the_values_it_changed(
    route: str, body: Callable[[World], dict[str, Any]], action: str, before: dict[str, Any],
    after: dict[str, Any], world: World, operator: HttpClient,
) -> None:
    post(operator, route, body(world))
    entry = only_entry()
    assert entry.action == action
    assert {k: entry.before.get(k) for k in before} == before
    assert {k: entry.after.get(k) for k in after} == after


def test_a_recurring_edit_records_only_what_changed(world: World, operator: HttpClient) -> None:
    post(operator, "recurring_update", {
        "jid": world.recurring, "queue": "jobs", "interval": "60", "priority": "3",
        "retries": "5", "backlog": "0", "tags": "", "data_json": '{"token": "new"}'})
    entry = only_entry()
    assert entry.before == {"priority": 0, "data": "previous"}
    assert entry.after == {"priority": 3, "data": "replaced"}  # never the data itself


def test_a_refused_action_is_not_audited(world: World, operator: HttpClient) -> None:
    post(operator, "job_retry", {"jids": [world.waiting]})  # not failed: refused
    assert AuditEntry.objects.count() == 0


@pytest.fixture
def ops(make_user: Callable[..., User]) -> User:
    """A user with every qless permission."""
    return make_user("ops", perms=ALL_PERMS)


def planted_entries(ops: User, make_user: Callable[..., User]) -> None:
    """Entries of two users, several actions and kinds, at known times, on two connections."""
    ann = make_user("ann", perms=ALL_PERMS)
    write(ops, change("priority", "j1"), change("move", "j2"))
    write(ann, change("pause", "mail", kind=Kind.QUEUE, before={"paused": False},
                      after={"paused": True}))
    write(ann, change("priority", "j3"), alias="other")
    times = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2), T0]
    for entry, when in zip(AuditEntry.objects.order_by("id"), times, strict=True):
        AuditEntry.objects.filter(pk=entry.pk).update(time=when)


def targets(client: HttpClient, query: str = "") -> list[str]:
    """The targets the page lists, in order."""
    response = client.get(url("audit") + query)
    assert response.status_code == 200
    return [row.entry.target for row in response.context["page"].items]


@pytest.mark.parametrize(("query", "expected"), [
    ("", ["mail", "j2", "j1"]),
    ("?actor=ann", ["mail"]),
    ("?actor=nobody", []),
    ("?action=move", ["j2"]),
    ("?kind=queue", ["mail"]),
    ("?target=j1", ["j1"]),
    ("?since=2026-03-01T12:30", ["mail", "j2"]),
    ("?until=2026-03-01T13:00", ["j2", "j1"]),
    ("?since=2026-03-01T12:30&until=2026-03-01T13:30", ["j2"]),
    ("?actor=ops&kind=job&action=priority", ["j1"]),
    # A malformed filter is said to be ignored, and the rest of the list is shown.
    ("?since=yesterday", ["mail", "j2", "j1"]),
])
def test_filters_narrow_the_list_newest_first(
    query: str, expected: list[str], ops: User, make_user: Callable[..., User]
) -> None:
    planted_entries(ops, make_user)
    assert targets(logged_in(ops), query) == expected


def test_a_malformed_filter_is_reported(ops: User, make_user: Callable[..., User]) -> None:
    planted_entries(ops, make_user)
    page = logged_in(ops).get(url("audit") + "?since=yesterday").content.decode()
    assert "These filters are ignored." in page


def test_each_connection_has_its_own_list(ops: User, make_user: Callable[..., User]) -> None:
    planted_entries(ops, make_user)
    response = logged_in(ops).get(url("audit", alias="other"))
    assert [row.entry.target for row in response.context["page"].items] == ["j3"]


def test_pages_of_fifty_newest_first(ops: User) -> None:
    write(ops, *(change(target=f"j{n}") for n in range(120)))
    client = logged_in(ops)
    assert targets(client)[:2] == ["j119", "j118"]
    assert len(targets(client, "?page=2")) == 50
    assert targets(client, "?page=3") == [f"j{n}" for n in range(19, -1, -1)]
    page = client.get(url("audit") + "?page=3&actor=ops").content.decode()
    assert "Page 3 of 3" in page and "120 in all" in page and "?page=2&amp;actor=ops" in page


def test_rows_link_to_what_they_changed(ops: User) -> None:
    write(ops, change(target="j1"), change("pause", "mail", kind=Kind.QUEUE),
          change("forget", "w1", kind=Kind.WORKER), change("tag_retry", "red", kind=Kind.TAG),
          change("group_retry", "*", kind=Kind.FAILURE_GROUP),
          change("config_set", "heartbeat", kind=Kind.CONFIG))
    page = logged_in(ops).get(url("audit")).content.decode()
    for link in (url("job", jid="j1"), url("queue", name="mail"), url("worker", name="w1"),
                 url("tagged") + "?tag=red", url("failures"), url("config")):
        assert f'href="{link}" class="qless-audit-target"' in page, link


def test_a_long_target_is_cut_and_not_linked(ops: User) -> None:
    write(ops, change(target="q" * 300, kind=Kind.QUEUE))
    entry = only_entry()
    assert len(entry.target) == TARGET_CHARS and entry.target.endswith("…")
    page = logged_in(ops).get(url("audit")).content.decode()
    assert '<span class="qless-audit-target">' in page and url("queue", name="q") not in page


def test_values_and_names_are_escaped(ops: User) -> None:
    write(ops, change(target="<script>x</script>", before={"tags": ["<b>"]}, after={}))
    page = logged_in(ops).get(url("audit")).content.decode()
    assert "<script>x" not in page and "&lt;script&gt;x" in page and "&lt;b&gt;" in page


def test_record_as_writes_the_audit_log_and_the_admin_log(ops: User) -> None:
    write(ops)  # nothing to record
    assert AuditEntry.objects.count() == LogEntry.objects.count() == 0
    write(ops, change(target="j1"), change("pause", "mail", kind=Kind.QUEUE))
    logged = LogEntry.objects.order_by("id")
    assert [(e.object_id, e.change_message) for e in logged] == [
        ("j1", "priority j1 (connection 'default')"),
        ("mail", "pause mail (connection 'default')"),
    ]
    assert [e.content_type.model for e in logged] == ["job", "queue"]


@pytest.mark.parametrize(("user", "status"), [
    ("anonymous", 302), ("non-staff", 302), ("staff without permissions", 403),
    ("view_qless only", 403), ("view_audit only", 403), ("view_qless and view_audit", 200),
])
def test_the_page_is_refused_as_the_other_pages_are(
    user: str, status: int, make_user: Callable[..., User]
) -> None:
    options: dict[str, dict[str, Any]] = {
        "non-staff": {"staff": False, "perms": ALL_PERMS}, "staff without permissions": {},
        "view_qless only": {"perms": ("view_qless",)},
        "view_audit only": {"perms": ("view_audit",)},
        "view_qless and view_audit": {"perms": ("view_qless", "view_audit")},
    }
    account = make_user("u", **options[user]) if user in options else None
    client = logged_in(account)
    for path in (url("audit"), "/admin/django_qless/auditentry/"):
        response = client.get(path)
        assert response.status_code == status, path
        if status == 302:
            assert response["Location"].startswith("/admin/login/?next="), path


def test_the_navigation_shows_audit_to_its_viewers_only(
    world: World, viewer: HttpClient, operator: HttpClient
) -> None:
    audit_link = f'href="{url("audit")}"'
    assert audit_link not in viewer.get(url("overview")).content.decode()
    assert audit_link in operator.get(url("overview")).content.decode()


def plan(query: str) -> str:
    """SQLite's plan for the page's query with these filters."""
    form = AuditFilterForm(dict(pair.split("=") for pair in query.split("&") if pair))
    assert form.is_valid(), form.errors
    sql, params = filtered("default", form.cleaned_data)[:50].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(str(row[-1]) for row in cursor.fetchall())


@pytest.mark.parametrize(("query", "index"), [
    ("", "qless_audit_time"), ("actor=ops", "qless_audit_actor"),
    ("action=move", "qless_audit_action"), ("kind=queue", "qless_audit_kind"),
    ("target=j1", "qless_audit_target"), ("since=2026-03-01", "qless_audit_time"),
    ("target=j1&since=2026-03-01", "qless_audit_target"),
])
def test_each_filter_reads_one_index_in_order(query: str, index: str, db: None) -> None:
    found = plan(query)
    assert f"USING INDEX {index}" in found, found
    assert "TEMP B-TREE" not in found, found  # no sort of the matching rows


@pytest.mark.timeout(300)
def test_the_page_answers_quickly_over_100_000_entries(ops: User) -> None:
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    actions, kinds = ["priority", "move", "retry", "cancel"], list(Kind)
    AuditEntry.objects.bulk_create((
        AuditEntry(time=base + timedelta(seconds=n), actor=f"user{n % 7}", connection="default",
                   action=actions[n % 4], kind=kinds[n % len(kinds)], target=f"jid-{n}",
                   message="m", before={"priority": 0}, after={"priority": n})
        for n in range(100_000)
    ), batch_size=5000)
    client = logged_in(ops)
    for query in ("", "?page=1000", "?actor=user3", "?action=move&page=50", "?kind=queue",
                  "?target=jid-77777", "?since=2026-01-02T00:00&until=2026-01-02T01:00"):
        started = time.perf_counter()
        response = client.get(url("audit") + query)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, query
        assert elapsed < 1, f"{query}: {elapsed:.2f} s"
    assert targets(client, "?target=jid-77777") == ["jid-77777"]

