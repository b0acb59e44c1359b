"""Real separate processes putting cron slots and syncing at once: one job per slot."""

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

from django_qless.core import Client
from django_qless.core.crons import CronStore, jid_stem
from tests.recurring.conftest import MIDNIGHT
from tests.recurring.cron_helpers import define
from tests.redis_harness import RedisServer

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 8
SYNCS = 4
#: Simulated span each writer covers: two hours of a schedule that fires every minute.
SPAN = 2 * 3600

# A worker's tick, without Django: each process moves its own clock by 1-15 s per look,
# so the processes interleave differently on every run.
WRITER = """
import json, os, random, sys, time
import redis
from django_qless.core import Client
from django_qless.core.crons import CronStore
now = [float(os.environ["T0"])]
end = now[0] + float(os.environ["SPAN"])
client = Client(redis.Redis.from_url(os.environ["URL"]), clock=lambda: now[0],
                worker_name=f"writer-{os.getpid()}")
store = CronStore(client)
time.sleep(max(0.0, float(os.environ["START_AT"]) - time.time()))
created = []
while now[0] <= end:
    created += [o.jid for o in store.create_due() if o.created]
    now[0] += random.uniform(1, 15)
print(json.dumps(created))
"""

SYNC = """
import os, sys, time
import django
django.setup()
from django.core.management import call_command
time.sleep(max(0.0, float(os.environ["START_AT"]) - time.time()))
call_command("qless_recur", *sys.argv[1:])
"""


def run_together(program: str, count: int, env: dict[str, str], *args: str) -> list[str]:
    """`count` processes that start `program` at the same instant; their outputs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "START_AT": str(time.time() + 3), **env}
    procs = [subprocess.Popen([sys.executable, "-c", program, *args], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(count)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


def jobs_of(raw: redis.Redis, name: str) -> list[str]:
    """Jids of every job of schedule `name` in Redis."""
    keys = [k.removeprefix("ql:j:") for k in raw.scan_iter(f"ql:j:{jid_stem(name)}-*")]
    return sorted(k for k in keys if k.count("-") == 3)


@pytest.mark.slow
def test_eight_processes_put_each_slot_once(redis_server: RedisServer,
                                            redis_client: redis.Redis) -> None:
    client = Client(redis_server.client(), clock=lambda: MIDNIGHT)
    definition = define(client, "* * * * *")
    outputs = run_together(WRITER, WRITERS, {"URL": redis_server.url, "T0": str(MIDNIGHT),
                                             "SPAN": str(SPAN)})
    created = Counter(jid for out in outputs for jid in json.loads(out))
    # Every process created some slots, none created one twice, nor two created the same.
    assert set(created.values()) == {1}
    in_redis = jobs_of(redis_client, "sched")
    assert sorted(created) == in_redis
    slots = sorted(int(jid.split("-")[2]) for jid in in_redis)
    # Each minute of the span (and of the lead time after it) has its one job.
    assert slots[: SPAN // 60] == [MIDNIGHT + 60 * k for k in range(1, SPAN // 60 + 1)]
    assert len(slots) == len(set(slots))
    assert all(jid.endswith(definition.digest[:8]) for jid in in_redis)
    [stored] = CronStore(client).read_all()
    assert stored.last == slots[-1]


@pytest.mark.slow
def test_simultaneous_syncs_store_each_cron_schedule_once(
    redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    env = {"DJANGO_SETTINGS_MODULE": "tests.recurapp.cron_settings",
           "QLESS_TEST_URL": redis_server.url}
    reports = [json.loads(out) for out in run_together(SYNC, SYNCS, env, "--json")]
    created = Counter(action["name"] for report in reports for action in report["actions"]
                      if action["action"] == "create" and action["cron"] is not None)
    assert created == {"minutely": 1, "weekdays": 1}
    assert sorted(redis_client.zrange("ql:django_qless:crons", 0, -1)) == [
        "minutely", "weekdays"]
    # Each sync also put the minutely schedule's next slot: one job for it, scheduled.
    jids = jobs_of(redis_client, "minutely")
    slots = [int(jid.split("-")[2]) for jid in jids]
    assert 1 <= len(jids) <= 2 and len(set(slots)) == len(slots)
    for jid, slot in zip(jids, slots, strict=True):
        state = redis_client.hget(f"ql:j:{jid}", "state")
        # Scheduled until its slot comes: a slow run may cross it (then qless has made it
        # waiting, as for any scheduled job that came due).
        assert state == "scheduled" or (state == "waiting" and slot <= time.time()), (
            jid, state)
    again = [json.loads(out) for out in run_together(SYNC, SYNCS, env, "--json", "--prune")]
    assert all(not report["applied"] for report in again)
