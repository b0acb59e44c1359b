"""`manage.py qless_recur`: table, --dry-run, --check, --prune, --json, --list, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_qless.core import Client
from django_qless.schedules import MANAGED_TAG, schedule_jid
from tests.conftest import snapshot
from tests.redis_harness import RedisServer

ROOT = Path(__file__).resolve().parents[2]
POLL = schedule_jid("recurapp.poll_feed")
ACTION_KEYS = {"action", "connections", "name", "jid", "job", "queue", "every", "interval",
               "next_run", "next_run_utc", "changes", "reschedule", "reason", "cron",
               "next_runs", "next_runs_utc"}


def run(*args: str) -> tuple[str, str]:
    """call_command; returns (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command("qless_recur", *args, stdout=out, stderr=err, no_color=True)
    return out.getvalue(), err.getvalue()


def fails(*args: str) -> tuple[int, str, str]:
    """call_command expected to fail; returns (returncode, message, stdout)."""
    out = StringIO()
    with pytest.raises(CommandError) as err:
        call_command("qless_recur", *args, stdout=out, stderr=StringIO(), no_color=True)
    return err.value.returncode, str(err.value), out.getvalue()


@pytest.fixture
def db(redis_client: redis.Redis) -> redis.Redis:
    """The database the commands write to (flushed per test)."""
    return redis_client


def test_table_then_nothing_to_do(db: redis.Redis) -> None:
    out, _ = run()
    lines = out.splitlines()
    assert lines[0].split() == ["ACTION", "SCHEDULE", "JID", "JOB", "QUEUE", "EVERY", "NEXT",
                                "RUN", "DETAILS"]
    rows = [line.split() for line in lines[1:-1]]
    assert sorted((r[0], r[1]) for r in rows) == [
        ("create", "recurapp.nightly_cleanup"), ("create", "recurapp.poll_feed"),
        ("create", "report-eu"), ("create", "report-us"),
    ]
    assert lines[-1] == (
        "Applied: 4 create, 0 update, 0 unchanged, 0 remove; 0 unmanaged left alone."
    )
    assert db.exists(f"ql:r:{POLL}")
    out, _ = run()
    assert out.splitlines()[-1].startswith("Nothing to do: 0 create, 0 update, 4 unchanged")


def test_dry_run_writes_nothing(db: redis.Redis) -> None:
    out, _ = run("--dry-run")
    assert "Dry run, nothing written: 4 create" in out
    assert snapshot(db) == {}


def test_check_exit_codes(db: redis.Redis) -> None:
    code, message, out = fails("--check")
    assert code == 2
    assert message == "drift: 4 create, 0 update, 0 unchanged, 0 remove; 0 unmanaged left alone"
    assert snapshot(db) == {}
    run()
    out, _ = run("--check")
    assert "4 unchanged" in out
    # An orphan is drift only when the sync would prune it.
    Client(db).queue("old").recur("x.y", {}, 60, jid="recur-feedfeedfeedfeed",
                                  tags=[MANAGED_TAG])
    run("--check")
    assert fails("--check", "--prune")[0] == 2


def test_json_shape(db: redis.Redis) -> None:
    Client(db).queue("ops").recur("Other", {}, 60, jid="hand-made")
    out, _ = run("--json", "--dry-run")
    data = json.loads(out)
    assert set(data) == {"dry_run", "prune", "ok", "drift", "applied", "summary", "errors",
                         "actions"}
    assert (data["dry_run"], data["ok"], data["drift"], data["applied"]) == (
        True, True, True, False)
    assert data["summary"] == {"create": 4, "update": 0, "unchanged": 0, "remove": 0,
                               "orphan": 0, "conflict": 0, "unmanaged": 1}
    assert data["errors"] == []
    [poll] = [a for a in data["actions"] if a["jid"] == POLL]
    assert set(poll) == ACTION_KEYS
    assert poll["action"] == "create"
    assert (poll["name"], poll["job"], poll["queue"], poll["interval"]) == (
        "recurapp.poll_feed", "recurapp.poll_feed", "feeds", 300)
    assert poll["connections"] == ["default"]
    assert poll["next_run"] % 300 == 0
    assert poll["next_run_utc"].endswith("Z")


def test_json_update_lists_changes(db: redis.Redis) -> None:
    run()
    Client(db).recurring(POLL).update(priority=1)  # type: ignore[union-attr]
    data = json.loads(run("--json")[0])
    [poll] = [a for a in data["actions"] if a["jid"] == POLL]
    assert poll["action"] == "update"
    assert poll["changes"] == [{"field": "priority", "old": 1, "new": 5}]
    assert data["applied"] is True


def test_invalid_declaration_is_exit_1_and_writes_nothing(db: redis.Redis, settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {"x": {"JOB": "recurapp.vacuum",
                                                            "EVERY": -1}}}
    code, message, _ = fails()
    assert code == 1
    assert "QLESS['RECURRING']['x']" in message and "interval must be at least 1" in message
    code, _, out = fails("--json")
    data = json.loads(out)
    assert data["ok"] is False
    assert data["errors"][0]["id"] == "django_qless.E020"
    assert snapshot(db) == {}


def test_conflict_is_exit_1_and_writes_nothing(db: redis.Redis) -> None:
    Client(db).queue("feeds").recur("someone.else", {}, 60, jid=POLL)
    before = snapshot(db)
    code, message, out = fails()
    assert code == 1
    assert f"{POLL} a recurring job with this jid exists without the" in message
    assert any(line.startswith("conflict") for line in out.splitlines())
    assert snapshot(db) == before


def test_list_shows_managed_and_unmanaged(db: redis.Redis) -> None:
    run()
    Client(db).queue("ops").recur("Other", {}, 60, jid="hand-made", tags=["ops"])
    out, _ = run("--list")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["hand-made"][1] == "no"
    assert rows[POLL][1] == "yes"
    assert rows[POLL][-1] == "feeds"  # the reserved tag is not shown
    data = json.loads(run("--list", "--json")[0])
    assert {(t["jid"], t["managed"]) for t in data} >= {("hand-made", False), (POLL, True)}


def test_prune_in_the_table(db: redis.Redis) -> None:
    Client(db).queue("old").recur("x.y", {}, 60, jid="recur-feedfeedfeedfeed",
                                  tags=[MANAGED_TAG])
    out, _ = run()
    assert "orphan" in out and "--prune removes it" in out
    out, _ = run("--prune")
    assert "no longer declared" in out
    assert not db.exists("ql:r:recur-feedfeedfeedfeed")


def manage(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m django qless_recur ...` in a subprocess (real exit status)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.recurapp.settings",
           "QLESS_TEST_URL": url, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "django", "qless_recur", *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_exit_status_of_the_real_command(db: redis.Redis, redis_server: RedisServer) -> None:
    assert manage(redis_server.url, "--check").returncode == 2
    assert manage(redis_server.url).returncode == 0
    assert manage(redis_server.url, "--check").returncode == 0
    Client(db).recurring(POLL).cancel()  # type: ignore[union-attr]
    Client(db).queue("feeds").recur("someone.else", {}, 60, jid=POLL)
    failed = manage(redis_server.url)
    assert failed.returncode == 1
    assert "nothing written" in failed.stderr
