"""A6: unsafe lease settings written by another qless client stop the worker from popping.

qless's wire contract lets any client store a lease (`heartbeat`, `<queue>-heartbeat`) of
0 s or less, a negative grace period or concurrency cap; with a negative lease every lock
is expired at once and several workers hold one job. The worker refuses to start on them,
and a running worker stops popping (and renewing) until they are fixed; a job it is
running meanwhile is fenced before its last good renewal runs out, and runs again after.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless.core import Client, commands
from tests.faults import ledger
from tests.faults.checks import audited, compressed_time, idle, put_jobs, qless_client, settle
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]

#: Seconds between two checks of a running worker at the compressed lease (3 s / 2).
CHECK_INTERVAL = 1.5


def plant(client: Client, key: str, value: int | str) -> None:
    """Store a value the way another qless client can.

    Numbers go through the script's `config.set`, which takes any number; it refuses
    text for numeric keys, so text is written straight into the hash, as by an older client.
    """
    if isinstance(value, str):
        client.redis.hset("ql:config", key, value)
    else:
        client.run(commands.config_set(key, value))


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("heartbeat", -5, "heartbeat = -5"),
    ("heartbeat", 0, "heartbeat = 0"),
    ("q-heartbeat", 0, "q-heartbeat = 0"),
    ("grace-period", -3, "grace-period = -3"),
    ("grace-period", "abc", "grace-period = 'abc'"),
    ("q-max-concurrency", -1, "q-max-concurrency = -1"),
])
def test_an_unsafe_lease_setting_stops_the_worker_before_any_pop(
    key: str, value: int | str, shown: str, server: RedisServer,
    fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    (jid,) = put_jobs(client, 1, lambda n: {})
    plant(client, key, value)
    fleet = fleets(server.url, 1, "q", *FAST, restart=False)
    pid = fleet.pids()[0]
    code = fleet.wait_exit(pid, 30)
    output = fleet.output(pid)
    lines = [line for line in output.splitlines() if shown in line]
    figures.update(key=key, value=value, exit_code=code, lines=len(lines))
    assert code == 1
    assert lines, output
    job = client.get_job(jid)
    assert job is not None and job.state == "waiting"  # nothing was popped
    assert client.redis.zcard("ql:workers") == 0


def test_a_running_worker_pauses_while_the_lease_is_unsafe(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any]
) -> None:
    client = qless_client(server)
    compressed_time(client)
    fleet = fleets(server.url, 1, "q", *FAST, restart=False)
    wait_for(lambda: idle(client), 30, what="the worker to listen")
    (long_jid,) = put_jobs(client, 1, lambda n: {"ms": 4000})
    wait_for(lambda: ledger.read(fleet.ledger_dir), 10, what="the long job to start")

    planted = time.monotonic()
    plant(client, "heartbeat", -5)
    wait_for(lambda: "not popping until it is fixed" in fleet.output(), 10,
             what="the worker to see the unsafe lease")
    paused_after = time.monotonic() - planted
    waiting = put_jobs(client, 5, lambda n: {})
    expiries = set()

    def aborted() -> ledger.Entry | None:
        """The long job's run stopped by the fence (its lease ran out unrenewed)."""
        job = client.get_job(long_jid)
        assert job is not None
        expiries.add(job.expires)  # a renewal with the -5 s lease would move it back
        return next((entry for entry in ledger.read(fleet.ledger_dir)
                     if entry.jid == long_jid and entry.event in ("abort", "end")), None)

    # The 4 s job outlives its last good renewal (3 s lease): fenced before that expiry.
    stopped = wait_for(aborted, 10, every=0.05, what="the long job's fence")
    long_job = client.get_job(long_jid)
    # The worker would pop within a poll interval of the long job's end; it must not.
    popped = settle(lambda: any(client.get_job(j).state != "waiting"  # type: ignore[union-attr]
                                for j in waiting), 2 * CHECK_INTERVAL)

    fixed = time.monotonic()
    client.config.put("heartbeat", 3)
    wait_for(lambda: all(client.get_job(j).state == "complete"  # type: ignore[union-attr]
                         for j in waiting), 15, what="the jobs put while paused")
    resumed_after = time.monotonic() - fixed
    # Its lock ran out meanwhile: qless hands it out again once the settings are safe.
    wait_for(lambda: client.get_job(long_jid).state == "complete",  # type: ignore[union-attr]
             20, what="the long job's second run")
    runs = ledger.starts(ledger.read(fleet.ledger_dir))
    report = audited(client, fleet)
    figures.update(paused_after=round(paused_after, 2), resumed_after=round(resumed_after, 2),
                   renewals_while_paused=len(expiries) - 1, long_job_runs=len(runs[long_jid]),
                   fenced_before_expiry=round(float(min(expiries)) - stopped.t, 2),
                   popped_while_paused=popped, audit=report.clean)
    assert paused_after <= CHECK_INTERVAL + 1.0
    assert len(expiries) == 1  # not renewed with the unsafe lease
    # Stopped before its last good renewal ran out, and neither completed nor failed.
    assert stopped.event == "abort"
    assert stopped.t < float(min(expiries))
    assert long_job is not None and long_job.state == "running"
    assert len(runs[long_jid]) == 2
    assert not popped
    assert "lease settings fixed; popping again" in fleet.output()
    assert resumed_after <= CHECK_INTERVAL + 1.5
    assert fleet.live_pids() == fleet.pids()  # paused, never stopped
    assert report.clean, report.problems


def test_check_and_the_health_probe_report_an_unsafe_lease(
    server: RedisServer, settings: Any, figures: dict[str, Any]
) -> None:
    client = qless_client(server)
    plant(client, "grace-period", -3)
    plant(client, "q-heartbeat", 0)
    settings.QLESS = {"URL": server.url}
    found = [m for m in run_checks(tags=["django_qless"]) if m.id == "django_qless.W002"]
    out, err = StringIO(), StringIO()
    call_command("check", stdout=out, stderr=err)
    with pytest.raises(CommandError) as probe:
        call_command("qless_health", "w1", stdout=StringIO(), stderr=StringIO())
    figures.update(warnings=len(found))
    assert sorted(m.msg for m in found) == [
        "qless config grace-period = -3: the grace period must be >= 0",
        "qless config q-heartbeat = 0: the lease must be > 0",
    ]
    assert "grace-period = -3" in out.getvalue() + err.getvalue()
    assert "grace-period = -3" in str(probe.value)
    assert "q-heartbeat = 0" in str(probe.value)
