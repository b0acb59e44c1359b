"""The outbox under faults: a returned jid is a promise kept, and a sweep never re-runs a job.

Producers are real processes (`tests/faults/outbox_producer.py`) sharing one database
with the workers (`tests/faults/outbox_settings.py`): each test runs on a SQLite file and
on a PostgreSQL database of the suite's private cluster, where transactions really run
side by side. Their Redis connection goes through the fault proxy, which refuses every
connection (resets) while Redis is "down".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client, keys
from tests.faults import ledger
from tests.faults.checks import qless_client, settle, unfinished
from tests.faults.fleet import FAST, ROOT, Fleet
from tests.faults.outbox_db import SETTINGS, TABLE, OutboxDatabase, rows
from tests.faults.outbox_producer import DIED, HOLD
from tests.faults.proxy import FaultProxy
from tests.redis_harness import RedisServer

pytestmark = pytest.mark.faults

def environment(db: OutboxDatabase, url: str, **extra: str) -> dict[str, str]:
    """The environment of a producer or sweeper process."""
    return {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "QLESS_FAULTS_DB": db.setting,
            "QLESS_FAULTS_URL": url, "PYTHONPATH": str(ROOT), **extra}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run a producer mode to its end."""
    return subprocess.run([sys.executable, "-m", "tests.faults.outbox_producer", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def produce(env: dict[str, str], mode: str, count: int) -> tuple[int, list[str], dict[str, Any]]:
    """Run a producer; returns its exit status, the jids it was given and its report."""
    done = run(env, mode, str(count))
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr
    jids = lines[0].get("jids", [])
    report = lines[1] if len(lines) > 1 else {}
    return done.returncode, jids, report


def workers(fleets: Callable[..., Fleet], server: RedisServer, db: OutboxDatabase,
            count: int = 1) -> Fleet:
    """`count` `manage.py qless_worker` on queue q (each sweeping), on the shared database."""
    return fleets(server.url, count, "q", *FAST,
                  env={"DJANGO_SETTINGS_MODULE": SETTINGS, "QLESS_FAULTS_DB": db.setting})


def runs(fleet: Fleet) -> dict[str, int]:
    """Executions per jid, from the ledger."""
    found = ledger.starts(ledger.read(fleet.ledger_dir))
    return {jid: len(starts) for jid, starts in found.items()}


def drain(client: Client, jids: list[str], db: OutboxDatabase, timeout: float = 30) -> float:
    """Wait until every jid completed and the outbox is empty; returns the seconds taken."""
    started = time.monotonic()
    settle(lambda: unfinished(client, jids) == 0 and not rows(db), timeout)
    return round(time.monotonic() - started, 2)


def test_redis_down_at_commit_every_jid_is_kept_and_swept_once(
    server: RedisServer, proxy: FaultProxy, database: OutboxDatabase, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    proxy.reset_all()
    code, jids, report = produce(environment(database, proxy.url), "commit", 20)
    kept = rows(database)
    in_redis = sum(1 for jid in jids if client.get_job(jid) is not None)
    proxy.heal()
    fleet = workers(fleets, server, database)
    swept_in = drain(client, jids, database)
    executions = runs(fleet)
    lost = [jid for jid in jids if executions.get(jid, 0) == 0]
    figures.update(jids=len(jids), rows_after_commit=len(kept), in_redis_at_commit=in_redis,
                   later_callbacks_ran=report["after"], lost=len(lost),
                   executions=sum(executions.values()), rows_left=len(rows(database)),
                   swept_and_run_in=swept_in)
    assert code == 0 and report["after"] is True and report["error"] is None
    assert sorted(kept) == sorted(jids) and in_redis == 0
    assert lost == [] and set(executions.values()) == {1}
    assert rows(database) == []


def test_a_process_dead_between_commit_and_put_is_swept(
    server: RedisServer, database: OutboxDatabase, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    code, jids, _ = produce(environment(database, server.url), "die", 10)
    kept = rows(database)
    in_redis = sum(1 for jid in jids if client.get_job(jid) is not None)
    fleet = workers(fleets, server, database)
    swept_in = drain(client, jids, database)
    executions = runs(fleet)
    figures.update(jids=len(jids), exit_status=code, rows_after_commit=len(kept),
                   in_redis_at_death=in_redis,
                   lost=sum(1 for jid in jids if executions.get(jid, 0) == 0),
                   executions=sum(executions.values()), rows_left=len(rows(database)),
                   swept_and_run_in=swept_in)
    assert code == DIED and sorted(kept) == sorted(jids) and in_redis == 0
    assert sorted(executions) == sorted(jids) and set(executions.values()) == {1}
    assert rows(database) == []


def test_a_row_left_for_a_completed_job_is_deleted_without_a_rerun(
    server: RedisServer, database: OutboxDatabase, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    code, jids, _ = produce(environment(database, server.url), "commit", 5)
    fleet = workers(fleets, server, database)
    drain(client, jids, database)
    histories = {jid: len(client.redis.lrange(f"ql:j:{jid}-history", 0, -1)) for jid in jids}
    # Rows as a failed delete would leave them: the jobs were put and have completed since.
    # In one statement: the workers' sweeps (every 0.2 s) see all of them or none.
    jobs = client.get_jobs(jids)
    assert len(jobs) == len(jids)
    row = ("('default', 'q', %s, %s, %s, 0, '[]', '[]', false, '', '', "
           "'2000-01-01 00:00:00')")
    planted = len(database.execute(
        f'INSERT INTO {TABLE} (connection, queue, jid, klass, data, not_before, '  # noqa: S608
        'tags, depends, tracked, "unique", task_backend, created) '
        f"VALUES {', '.join([row] * len(jobs))} RETURNING jid",
        tuple(value for job in jobs for value in (job.jid, job.klass, job.raw_data))))
    settle(lambda: not rows(database), 30)
    states = {jid: getattr(client.get_job(jid), "state", None) for jid in jids}
    after = {jid: len(client.redis.lrange(f"ql:j:{jid}-history", 0, -1)) for jid in jids}
    executions = runs(fleet)
    figures.update(jobs=len(jids), rows_planted=planted, rows_left=len(rows(database)),
                   executions=sum(executions.values()),
                   reruns=sum(executions.values()) - len(executions))
    assert code == 0 and planted == len(jids)
    assert rows(database) == []
    assert set(states.values()) == {"complete"} and after == histories
    assert executions == dict.fromkeys(jids, 1)


def test_a_rolled_back_transaction_leaves_no_row_and_no_job(
    server: RedisServer, database: OutboxDatabase, figures: dict[str, Any]
) -> None:
    client = qless_client(server)
    code, jids, report = produce(environment(database, server.url), "rollback", 5)
    jobs = client.redis.keys("ql:j:*")
    figures.update(jids=len(jids), rows=len(rows(database)), jobs=len(jobs))
    assert code == 0 and (report["after"], report["error"]) == (False, "RollbackError")
    assert len(jids) == 5 and rows(database) == [] and jobs == []


def test_two_concurrent_sweepers_put_each_row_once(
    server: RedisServer, proxy: FaultProxy, database: OutboxDatabase, figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    proxy.reset_all()
    _, jids, _ = produce(environment(database, proxy.url), "commit", 200)
    proxy.heal()
    env = environment(database, server.url)
    sweepers = [subprocess.Popen([sys.executable, "-m", "django", "qless_outbox", "--age", "0"],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [sweeper.communicate(timeout=120) for sweeper in sweepers]
    put = [[line.split()[1] for line in out.splitlines() if line.startswith("put ")]
           for out, _ in outputs]
    puts = [sum(1 for entry in job.history if entry.what == "put")
            for job in (client.get_job(jid) for jid in jids) if job is not None]
    skipped = sum(1 for out, _ in outputs if "another sweeper holds" in out)
    figures.update(rows=len(jids), put_by_first=len(put[0]), put_by_second=len(put[1]),
                   skipped_on_the_lock=skipped, jobs=len(puts), puts_per_job=sorted(set(puts)),
                   rows_left=len(rows(database)))
    assert [sweeper.returncode for sweeper in sweepers] == [0, 0], outputs
    assert sorted(put[0] + put[1]) == sorted(jids)  # each row put by one sweeper, once
    assert puts == [1] * len(jids)
    assert rows(database) == []


def test_a_commit_racing_two_sweeping_workers_puts_and_runs_each_job_once(
    server: RedisServer, database: OutboxDatabase, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    fleet = workers(fleets, server, database, count=2)
    assert settle(lambda: client.redis.zcard(keys.WORKER_PRESENCE_INDEX) >= 2, 60)
    # Held open past the sweep age, the rows are due the moment they become visible; the
    # commit's puts start once a sweep has taken a row, so both go after the same rows.
    code, jids, report = produce(environment(database, server.url), "late", 200)
    swept_in = drain(client, jids, database, timeout=60)
    executions = runs(fleet)
    puts = [sum(1 for entry in job.history if entry.what == "put")
            for job in (client.get_job(jid) for jid in jids) if job is not None]
    figures.update(jids=len(jids), held_open=HOLD, put_at_commit=report["put_at_commit"],
                   put_by_sweeps=len(jids) - report["put_at_commit"], jobs=len(puts),
                   puts_per_job=sorted(set(puts)), executions=sum(executions.values()),
                   reruns=sum(executions.values()) - len(executions),
                   rows_left=len(rows(database)), drained_in=swept_in)
    assert code == 0 and report["after"] is True and report["error"] is None
    assert report["swept_first"] is True
    assert puts == [1] * len(jids)
    assert executions == dict.fromkeys(jids, 1)
    assert rows(database) == []


def test_outbox_off_keeps_the_old_behaviour(
    server: RedisServer, proxy: FaultProxy, database: OutboxDatabase, figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    proxy.reset_all()
    code, jids, report = produce(environment(database, proxy.url, QLESS_FAULTS_OUTBOX="0"),
                                 "commit", 5)
    proxy.heal()
    lost = [jid for jid in jids if client.get_job(jid) is None]
    figures.update(jids=len(jids), rows=len(rows(database)), lost=len(lost),
                   error=report["error"], later_callbacks_ran=report["after"])
    assert code == 0 and (report["after"], report["error"]) == (False, "ConnectionError")
    assert rows(database) == [] and lost == jids
