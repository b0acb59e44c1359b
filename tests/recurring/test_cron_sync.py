"""qless_recur with cron schedules: create, unchanged, update, prune, and their slot jobs."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless.core import Client
from django_qless.core.crons import CronStore
from django_qless.recurring.render import when
from django_qless.recurring.sync import SyncReport
from django_qless.schedules import cron, schedule_jid
from tests.recurring.conftest import MIDNIGHT, Clock
from tests.recurring.cron_helpers import QUEUE, slot_jobs, slot_of

Sync = Callable[..., SyncReport]


def declare(settings: Any, expression: str | None = "*/5 * * * *", **extra: Any) -> None:
    """Declare (or with None, stop declaring) the cron schedule `sched` in settings."""
    recurring = {} if expression is None else {"sched": {
        "JOB": "recurapp.vacuum", "CRON": expression, "ARGS": ["t"], "QUEUE": QUEUE, **extra}}
    settings.QLESS = {**settings.QLESS, "RECURRING": recurring}


def digest() -> None:
    """A job the tests give a cron schedule on its decorator."""


def cron_kinds(report: SyncReport) -> dict[str, str]:
    """Schedule name -> action kind, for cron schedules."""
    return {str(a.name): a.kind for _, a in report.actions if a.is_cron}


def test_sync_creates_then_leaves_unchanged(settings: Any, sync: Sync, client: Client) -> None:
    declare(settings, TZ="Europe/Paris", CATCH_UP="2")
    report = sync()
    assert cron_kinds(report) == {"sched": "create"}
    [stored] = CronStore(client).read_all()
    definition = stored.definition
    assert (definition.expression, definition.tz, definition.catch_up) == (
        "*/5 * * * *", "Europe/Paris", "2")
    assert (definition.klass, definition.queue, stored.last) == (
        "recurapp.vacuum", QUEUE, MIDNIGHT + 0.25)
    assert stored.next_run == MIDNIGHT + 300
    [action] = [a for _, a in report.actions if a.is_cron]
    assert action.next_runs == tuple(MIDNIGHT + 300 * k for k in range(1, 6))
    again = sync()
    assert cron_kinds(again) == {"sched": "unchanged"} and not again.drift


def test_a_sync_puts_the_due_slots_too(settings: Any, sync: Sync, client: Client,
                                       clock: Clock) -> None:
    declare(settings)
    sync()
    clock.now = MIDNIGHT + 280
    sync()  # nothing to write, but the slot due within the lead time is put
    assert [slot_of(p.jid) for p in slot_jobs(client)] == [MIDNIGHT + 300]


def test_a_changed_expression_cancels_the_old_future_slots(
    settings: Any, sync: Sync, client: Client, clock: Clock
) -> None:
    declare(settings)
    sync()
    clock.now = MIDNIGHT + 280
    CronStore(client).create_due()
    [old] = slot_jobs(client)
    assert slot_of(old.jid) == MIDNIGHT + 300
    declare(settings, "*/7 * * * *")
    report = sync()
    [action] = [a for _, a in report.actions if a.is_cron]
    assert action.kind == "update" and action.reschedule
    assert [(c.name, c.old, c.new) for c in action.changes] == [
        ("expression", "*/5 * * * *", "*/7 * * * *")]
    # The 00:05 job of the old expression is gone; 00:07 is the new one's next slot.
    assert client.get_job(old.jid) is None
    clock.now = MIDNIGHT + 400
    CronStore(client).create_due()
    assert [slot_of(p.jid) for p in slot_jobs(client)] == [MIDNIGHT + 420]


def test_a_change_of_job_options_replaces_future_slot_jobs(
    settings: Any, sync: Sync, client: Client, clock: Clock
) -> None:
    declare(settings)
    sync()
    clock.now = MIDNIGHT + 280
    CronStore(client).create_due()
    declare(settings, PRIORITY=7)
    sync()  # cancels the 00:05 job of the old definition, puts the new one
    [put] = slot_jobs(client)
    job = client.get_job(put.jid)
    assert job is not None and job.priority == 7 and slot_of(put.jid) == MIDNIGHT + 300


def test_prune_removes_the_schedule_and_cancels_its_jobs(
    settings: Any, sync: Sync, client: Client, clock: Clock
) -> None:
    declare(settings, CATCH_UP="3")
    sync()
    clock.now = MIDNIGHT + 3 * 300 + 200  # slots missed: 00:05, 00:10, 00:15
    CronStore(client).create_due()
    assert len(slot_jobs(client)) == 3
    declare(settings, None)
    kept = sync()
    assert cron_kinds(kept) == {"sched": "orphan"}
    assert CronStore(client).read_all() != []
    pruned = sync(prune=True)
    assert cron_kinds(pruned) == {"sched": "remove"}
    assert slot_jobs(client) == []
    assert CronStore(client).read_all() == []
    assert client.redis.keys("ql:django_qless:cron*") == []
    # No later look, by any writer, puts a job for it.
    clock.now += 3600
    assert CronStore(client).create_due() == []
    assert slot_jobs(client) == []


def test_a_running_slot_job_is_left_alone_by_prune(
    settings: Any, sync: Sync, client: Client, clock: Clock
) -> None:
    declare(settings)
    sync()
    clock.now = MIDNIGHT + 300
    CronStore(client).create_due()
    [job] = client.queue(QUEUE).pop()
    declare(settings, None)
    sync(prune=True)
    assert [p.jid for p in slot_jobs(client)] == [job.jid]


def test_switching_between_interval_and_cron(settings: Any, sync: Sync,
                                             client: Client) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {"sched": {
        "JOB": "recurapp.vacuum", "EVERY": 300, "ARGS": ["t"], "QUEUE": QUEUE}}}
    sync()
    assert client.recurring(schedule_jid("sched")) is not None
    declare(settings)
    report = sync()
    kinds = {(a.name or a.jid, a.is_cron): a.kind for _, a in report.actions
             if a.jid == schedule_jid("sched")}
    assert kinds == {(schedule_jid("sched"), False): "remove", ("sched", True): "create"}
    assert client.recurring(schedule_jid("sched")) is None
    settings.QLESS = {**settings.QLESS, "RECURRING": {"sched": {
        "JOB": "recurapp.vacuum", "EVERY": 300, "ARGS": ["t"], "QUEUE": QUEUE}}}
    back = sync()
    assert cron_kinds(back) == {"sched": "remove"}
    assert CronStore(client).read_all() == []


def test_command_table_and_json_show_next_runs(settings: Any, sync: Sync,
                                               client: Client) -> None:
    declare(settings, "0 9 * * MON-FRI", TZ="Europe/Paris")
    # The command runs on the real clock: the expected runs are computed from it.
    expected = [when(t) for t in cron("0 9 * * MON-FRI", tz="Europe/Paris").next_runs(
        time.time(), 5)]
    assert all(dt.datetime.strptime(t, "%Y-%m-%d %H:%M:%SZ").weekday() < 5 for t in expected)
    out = StringIO()
    call_command("qless_recur", "--dry-run", stdout=out)
    [row] = [line for line in out.getvalue().splitlines() if line.startswith("create  sched")]
    assert "cron 0 9 * * MON-FRI Europe/Paris" in row
    assert row.endswith(", ".join(expected[:3]))
    out = StringIO()
    call_command("qless_recur", "--json", stdout=out)
    [action] = [a for a in json.loads(out.getvalue())["actions"] if a["name"] == "sched"]
    assert action["cron"] == {"expression": "0 9 * * MON-FRI", "tz": "Europe/Paris",
                              "catch_up": "latest"}
    assert action["interval"] is None
    assert action["next_runs_utc"] == expected
    out = StringIO()
    call_command("qless_recur", "--check", stdout=out)
    assert "unchanged  sched" in out.getvalue()


@pytest.mark.parametrize("flag", ["--check", "--dry-run"])
def test_check_and_dry_run_write_nothing(settings: Any, client: Client, flag: str) -> None:
    declare(settings)
    try:
        call_command("qless_recur", flag, stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        assert flag == "--check" and exc.returncode == 2
    assert client.redis.keys("ql:django_qless:cron*") == []


@pytest.mark.usefixtures("clean_registry")
def test_a_decorator_declared_cron_schedule_is_synced_and_run(
    sync: Sync, client: Client, clock: Clock
) -> None:
    from django_qless import qless_job  # noqa: PLC0415

    qless_job(name="crontest.digest", queue=QUEUE, priority=3, tags=["mail"],
              recur=cron("*/10 * * * *", tz="Asia/Tokyo"))(digest)
    report = sync()
    assert cron_kinds(report) == {"crontest.digest": "create"}
    clock.now = MIDNIGHT + 590
    CronStore(client).create_due()
    [put] = slot_jobs(client, "crontest.digest")
    job = client.get_job(put.jid)
    assert job is not None
    assert (job.klass, job.priority, put.state, put.runs_at) == (
        "crontest.digest", 3, "scheduled", MIDNIGHT + 600)
    assert set(job.tags) == {"mail", "django_qless:managed"}


def test_list_shows_cron_schedules_beside_templates(settings: Any, sync: Sync) -> None:
    declare(settings, "0 9 * * MON-FRI", TZ="Europe/Paris")
    sync()
    out = StringIO()
    call_command("qless_recur", "--list", stdout=out)
    lines = out.getvalue().splitlines()
    header = lines.index("") + 1
    assert lines[header].split()[:3] == ["SCHEDULE", "CRON", "JOB"]
    [row] = [line for line in lines[header + 1:] if line.startswith("sched ")]
    assert "0 9 * * MON-FRI Europe/Paris" in row and "recurapp.vacuum" in row
    out = StringIO()
    call_command("qless_recur", "--list", "--json", stdout=out)
    [entry] = [e for e in json.loads(out.getvalue()) if e["kind"] == "cron"]
    assert (entry["name"], entry["jid"], entry["cron"]["tz"]) == (
        "sched", schedule_jid("sched"), "Europe/Paris")
    assert len(entry["next_runs"]) == 5
