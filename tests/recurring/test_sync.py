"""sync_schedules against a real Redis, with an injected clock: writes, idempotence, spawns."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless.core import Client, templates
from django_qless.recurring import sync_schedules
from django_qless.recurring.sync import RecurringSyncError, SyncReport
from django_qless.registry import registry
from django_qless.schedules import MANAGED_TAG, schedule_jid
from tests.conftest import snapshot
from tests.recurring.conftest import MIDNIGHT, Clock

Sync = Callable[..., SyncReport]
VACUUM = schedule_jid("vacuum")
DECLARED_IN_CODE = {
    schedule_jid(name)
    for name in ("recurapp.nightly_cleanup", "recurapp.poll_feed", "report-eu", "report-us")
}


def declare_vacuum(settings: Any, **entry: Any) -> None:
    """Schedule recurapp.vacuum from QLESS["RECURRING"] (queue `vacuum`, every minute)."""
    spec = {"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": ["events"], "QUEUE": "vacuum", **entry}
    settings.QLESS = {**settings.QLESS, "RECURRING": {"vacuum": spec}}


def next_run(client: Client, queue: str, jid: str) -> float | None:
    """The template's score in its queue's recur set."""
    return client.redis.zscore(f"ql:q:{queue}-recur", jid)


def kinds(report: SyncReport) -> dict[str, str]:
    """jid -> action kind."""
    return {action.jid: action.kind for _, action in report.actions}


def test_first_sync_creates_tagged_aligned_templates(sync: Sync, client: Client) -> None:
    report = sync()
    assert report.ok and report.applied
    assert kinds(report) == dict.fromkeys(DECLARED_IN_CODE, "create")
    poll = client.recurring(schedule_jid("recurapp.poll_feed"))
    assert poll is not None
    assert (poll.klass, poll.queue_name, poll.priority, poll.retries, poll.backlog) == (
        "recurapp.poll_feed", "feeds", 5, 2, 2)
    assert poll.interval == 300
    assert set(poll.tags) == {"feeds", MANAGED_TAG}
    assert poll.data == {"args": [], "kwargs": {"source": "main"}}
    assert next_run(client, "feeds", poll.jid) == MIDNIGHT + 300
    assert next_run(client, "maintenance", schedule_jid("recurapp.nightly_cleanup")) == (
        MIDNIGHT + 3 * 3600)
    assert next_run(client, "reports", schedule_jid("report-us")) == MIDNIGHT + 1800
    us = client.recurring(schedule_jid("report-us"))
    assert us is not None and us.backlog == 0 and us.data == {"args": ["us"], "kwargs": {}}


def test_second_sync_changes_nothing(sync: Sync, client: Client, clock: Clock) -> None:
    sync()
    before = snapshot(client.redis)
    clock.advance(1234)
    report = sync()
    assert set(kinds(report).values()) == {"unchanged"}
    assert not report.drift and not report.applied
    assert snapshot(client.redis) == before


def test_declaration_error_writes_nothing(sync: Sync, client: Client, settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {"x": {"JOB": "no.such.job", "EVERY": 60}}}
    report = sync()
    assert not report.ok
    assert [p.id for p in report.problems] == ["django_qless.E021"]
    assert report.databases == ()
    assert snapshot(client.redis) == {}
    with pytest.raises(RecurringSyncError, match="no.such.job"):
        report.raise_for_errors()


def test_dry_run_writes_nothing(sync: Sync, client: Client, settings: Any) -> None:
    empty = sync(dry_run=True)
    assert empty.drift and not empty.applied
    assert snapshot(client.redis) == {}
    sync()
    declare_vacuum(settings, PRIORITY=3)
    before = snapshot(client.redis)
    report = sync(dry_run=True, prune=True)
    assert kinds(report)[VACUUM] == "create"
    assert snapshot(client.redis) == before


@pytest.mark.parametrize(("backlog", "spawned"), [(None, 10), (1, 2), (2, 3), (20, 10)])
def test_spawns_after_idle_time(
    sync: Sync, client: Client, clock: Clock, settings: Any, backlog: int | None, spawned: int
) -> None:
    declare_vacuum(settings, BACKLOG=backlog)
    sync()
    clock.now = MIDNIGHT + 600  # ten runs due: 00:01 .. 00:10, nobody popped
    jobs = client.queue("vacuum").pop(50)
    assert len(jobs) == spawned
    assert {job.klass for job in jobs} == {"recurapp.vacuum"}
    assert all(MANAGED_TAG in job.tags for job in jobs)
    # The newest `spawned` runs are kept; the older ones were skipped.
    count = client.recurring(VACUUM).count  # type: ignore[union-attr]
    assert count == spawned
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 660


def test_backlog_between_run_times_spawns_backlog_jobs(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings, BACKLOG=2)
    sync()
    clock.now = MIDNIGHT + 600.5
    assert len(client.queue("vacuum").pop(50)) == 2


def test_clock_step_forward_spawns_at_most_two(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings)  # default backlog 1
    sync()
    clock.advance(3600)
    assert len(client.queue("vacuum").pop(100)) <= 2


def test_spawned_job_runs_through_the_job_definition(
    sync: Sync, client: Client, clock: Clock
) -> None:
    sync()
    clock.now = MIDNIGHT + 300
    [job] = client.queue("feeds").pop()
    assert job.klass == "recurapp.poll_feed"
    assert registry.get(job.klass).execute(job) == "main"


def test_unchanged_sync_keeps_missed_runs(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings, BACKLOG=None)
    sync()
    clock.now = MIDNIGHT + 600
    report = sync()
    assert kinds(report)[VACUUM] == "unchanged"
    # No `recur` was sent, so the next spawn time was not moved past the missed runs.
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 60
    assert len(client.queue("vacuum").pop(50)) == 10


def test_interval_change_realigns_and_keeps_count(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings)
    sync()
    clock.now = MIDNIGHT + 120
    assert len(client.queue("vacuum").pop(10)) == 2
    declare_vacuum(settings, EVERY=300)
    clock.now = MIDNIGHT + 130.25
    report = sync()
    [action] = [a for _, a in report.actions if a.jid == VACUUM]
    assert (action.kind, action.reschedule) == ("update", True)
    assert [(c.name, c.old, c.new) for c in action.changes] == [("interval", 60, 300)]
    template = client.recurring(VACUUM)
    assert template is not None and (template.interval, template.count) == (300, 2)
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 300
    assert kinds(sync())[VACUUM] == "unchanged"
    clock.now = MIDNIGHT + 300
    assert [job.jid for job in client.queue("vacuum").pop(10)] == [f"{VACUUM}-3"]


def test_offset_change_moves_the_next_run(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings, EVERY=3600)
    sync()
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 3600
    declare_vacuum(settings, EVERY=3600, OFFSET=900)
    report = sync()
    [action] = [a for _, a in report.actions if a.jid == VACUUM]
    assert [c.name for c in action.changes] == ["next_run"]
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 900
    declare_vacuum(settings, EVERY=3600, AT="00:45")
    sync()
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 2700
    assert kinds(sync())[VACUUM] == "unchanged"


def test_other_changes_keep_next_run_and_missed_runs(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings, BACKLOG=None)
    sync()
    clock.now = MIDNIGHT + 180
    declare_vacuum(settings, BACKLOG=None, PRIORITY=7, ARGS=["sessions"], TAGS=["db"],
                   RETRIES=1)
    report = sync()
    [action] = [a for _, a in report.actions if a.jid == VACUUM]
    assert action.kind == "update" and not action.reschedule
    assert next_run(client, "vacuum", VACUUM) == MIDNIGHT + 60
    template = client.recurring(VACUUM)
    assert template is not None
    assert (template.priority, template.retries, template.count) == (7, 1, 0)
    assert set(template.tags) == {"db", MANAGED_TAG}
    jobs = client.queue("vacuum").pop(10)
    assert len(jobs) == 3
    assert {json.dumps(job.data) for job in jobs} == {'{"args": ["sessions"], "kwargs": {}}'}
    assert {job.priority for job in jobs} == {7}


def test_moving_to_another_queue_keeps_the_next_run(
    sync: Sync, client: Client, clock: Clock, settings: Any
) -> None:
    declare_vacuum(settings)
    sync()
    declare_vacuum(settings, QUEUE="vacuum2")
    report = sync()
    [action] = [a for _, a in report.actions if a.jid == VACUUM]
    assert [(c.name, c.old, c.new) for c in action.changes] == [("queue", "vacuum", "vacuum2")]
    assert next_run(client, "vacuum", VACUUM) is None
    assert next_run(client, "vacuum2", VACUUM) == MIDNIGHT + 60
    clock.now = MIDNIGHT + 60
    assert client.queue("vacuum").pop() == []
    assert [job.jid for job in client.queue("vacuum2").pop()] == [f"{VACUUM}-1"]


def unmanaged(client: Client) -> dict[str, bytes]:
    """Recurring jobs made without django_qless's tag: by hand, another client, the admin."""
    ops = client.queue("ops")
    ops.recur("recurapp.vacuum", {"args": ["x"], "kwargs": {}}, 60, jid="hand-made",
              tags=["ops"])
    ops.recur("Other::RubyJob", {}, 3600, jid="recur-0000000000000000")
    client.queue("vacuum").recur("recurapp.vacuum", {}, 30, jid="vacuum-by-hand")
    return {key: value for key, value in snapshot(client.redis).items()
            if key in (b"ql:r:hand-made", b"ql:r:recur-0000000000000000",
                       b"ql:r:vacuum-by-hand", b"ql:q:ops-recur")}


def test_prune_removes_only_managed_undeclared(
    sync: Sync, client: Client, settings: Any
) -> None:
    declare_vacuum(settings)
    sync()
    before = unmanaged(client)
    settings.QLESS = {"URL": settings.QLESS["URL"]}
    kept = sync()
    assert kinds(kept)[VACUUM] == "orphan"
    assert client.recurring(VACUUM) is not None
    assert kept.unmanaged() == 3
    pruned = sync(prune=True)
    assert kinds(pruned)[VACUUM] == "remove"
    assert client.recurring(VACUUM) is None
    assert "vacuum-by-hand" not in kinds(pruned)
    after = snapshot(client.redis)
    assert {key: after.get(key) for key in before} == before
    assert set(kinds(sync(prune=True)).values()) == {"unchanged"}


def test_declared_jid_taken_by_unmanaged_job_is_a_conflict(
    sync: Sync, client: Client, settings: Any
) -> None:
    client.queue("ops").recur("recurapp.vacuum", {}, 60, jid=VACUUM, tags=["ops"])
    declare_vacuum(settings)
    before = snapshot(client.redis)
    report = sync()
    assert not report.ok
    assert [a.jid for a in report.conflicts] == [VACUUM]
    assert snapshot(client.redis) == before
    # Handing it over: tag it, and the next sync adopts and updates it.
    client.recurring(VACUUM).tag(MANAGED_TAG)  # type: ignore[union-attr]
    report = sync()
    assert report.ok and kinds(report)[VACUUM] == "update"


def test_concurrent_write_between_read_and_exec_is_retried(
    sync: Sync, client: Client, redis_server: Any, clock: Clock, monkeypatch: Any
) -> None:
    other = Client(redis_server.client(), clock=clock, worker_name="other-host")
    calls = {"n": 0}
    real_read = templates.Templates.read

    def read_then_race(self: templates.Templates, jids: Any) -> Any:
        calls["n"] += 1
        result = real_read(self, jids)
        if calls["n"] == 2:  # the first read under WATCH: another host syncs now
            monkeypatch.setattr(templates.Templates, "read", real_read)
            assert sync_schedules(clients={"default": other}).applied
            monkeypatch.setattr(templates.Templates, "read", read_then_race)
        return result

    monkeypatch.setattr(templates.Templates, "read", read_then_race)
    report = sync()
    [db] = report.databases
    assert db.attempts == 2
    assert not db.applied
    assert set(kinds(report).values()) == {"unchanged"}
    assert len(client.redis.keys("ql:r:*")) == len(DECLARED_IN_CODE)


def test_moving_to_another_connection_removes_the_old_copy(
    sync: Sync, settings: Any, redis_server: Any
) -> None:
    url = settings.QLESS["URL"]
    db1 = redis_server.client(db=1)
    db1.flushdb()
    declare_vacuum(settings)
    sync_schedules()
    db0 = redis_server.client(db=0)
    assert db0.exists(f"ql:r:{VACUUM}")
    other_url = url.rsplit("/", 1)[0] + "/1"
    settings.QLESS = {**settings.QLESS, "CONNECTIONS": {
        "other": {"URL": other_url, "QUEUES": ["vacuum"]}}}
    report = sync_schedules()
    moved = {(",".join(db.aliases), a.jid): a.kind for db, a in report.actions if a.jid == VACUUM}
    assert moved == {("default", VACUUM): "remove", ("other", VACUUM): "create"}
    assert not db0.exists(f"ql:r:{VACUUM}")
    assert db1.exists(f"ql:r:{VACUUM}")
    db1.flushdb()


def test_two_aliases_on_one_database_are_synced_once(settings: Any) -> None:
    declare_vacuum(settings)
    settings.QLESS = {**settings.QLESS, "CONNECTIONS": {
        "same": {"URL": settings.QLESS["URL"], "QUEUES": ["vacuum"]}}}
    first = sync_schedules()
    [db] = first.databases
    assert db.aliases == ("default", "same")
    second = sync_schedules()
    assert set(kinds(second).values()) == {"unchanged"}


def test_redis_down_raises(settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    with pytest.raises(redis.ConnectionError):
        sync_schedules()


def test_info_denied_falls_back_to_one_database_per_client(
    sync: Sync, client: Client, monkeypatch: Any
) -> None:
    def denied(*args: Any, **kwargs: Any) -> Any:
        raise redis.ResponseError("NOPERM this user has no permissions to run the 'info' command")

    monkeypatch.setattr(client.redis, "info", denied)
    report = sync()
    assert report.ok and report.applied
    assert set(kinds(sync()).values()) == {"unchanged"}
