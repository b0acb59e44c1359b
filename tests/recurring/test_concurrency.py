"""Several hosts running `qless_recur` at the same moment against one Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from django_qless.schedules import MANAGED_TAG, schedule_jid
from tests.redis_harness import RedisServer

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 4
NAMES = ("recurapp.nightly_cleanup", "recurapp.poll_feed", "report-eu", "report-us")
QUEUES = ("maintenance", "feeds", "reports")

# Each process sets Django up first, then waits for a shared start time, so the syncs
# themselves (not the interpreter start-ups) overlap.
PROGRAM = """
import os, sys, time
import django
django.setup()
from django.core.management import call_command
time.sleep(max(0.0, float(os.environ["START_AT"]) - time.time()))
call_command("qless_recur", *sys.argv[1:])
"""


def start_together(url: str, *args: str) -> list[subprocess.Popen[str]]:
    """PROCESSES subprocesses that run `qless_recur` at the same instant."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.recurapp.settings",
           "QLESS_TEST_URL": url, "PYTHONPATH": str(ROOT), "START_AT": str(time.time() + 3)}
    return [
        subprocess.Popen([sys.executable, "-c", PROGRAM, *args], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)
    ]


def finish(procs: list[subprocess.Popen[str]]) -> list[dict[str, object]]:
    """Wait for every process; each must succeed; returns their JSON reports."""
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    return reports


@pytest.mark.slow
def test_simultaneous_syncs_leave_one_template_per_schedule(
    redis_client: redis.Redis, redis_server: RedisServer
) -> None:
    reports = finish(start_together(redis_server.url, "--json"))
    jids = {schedule_jid(name) for name in NAMES}
    assert set(redis_client.keys("ql:r:*")) == {f"ql:r:{jid}" for jid in jids}
    in_sets = [jid for queue in QUEUES for jid in redis_client.zrange(f"ql:q:{queue}-recur", 0, -1)]
    assert sorted(in_sets) == sorted(jids)
    for jid in jids:
        assert MANAGED_TAG in json.loads(redis_client.hget(f"ql:r:{jid}", "tags") or "[]")
    # Exactly one process created each schedule; the others found it done.
    created = Counter(
        action["jid"]
        for report in reports
        for action in report["actions"]  # type: ignore[attr-defined]
        if action["action"] == "create"
    )
    assert created == dict.fromkeys(jids, 1)
    # And running again from every host at once changes nothing.
    before = {key: redis_client.dump(key) for key in redis_client.keys("ql:*")}
    again = finish(start_together(redis_server.url, "--json", "--prune"))
    assert all(not report["applied"] for report in again)
    assert {key: redis_client.dump(key) for key in redis_client.keys("ql:*")} == before
