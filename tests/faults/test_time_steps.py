"""D3/D4: delayed jobs against an idle worker, and a worker clock stepped by an hour.

libfaketime is not installed here, so the clock steps go through the clock qless takes
from its callers: the worker runs under tests/faults/stepped.py, whose clock is the
machine's plus an offset read from a file at every call, and the test rewrites that file
while the worker runs. The pops, heartbeats and completions then carry the stepped `now`,
as they would after an NTP step.

- D4: delayed jobs (2.0 to 3.05 s instead of the plan's 5 s, to keep the suite short) put
  into an idle worker polling only every 30 s start at their due time, never before: the
  worker sleeps until the earliest due time, not until the next poll.
- D3, forward: after a +1 h step, a recurring job (interval 60 s, backlog 1) spawns at
  most 2 jobs, while a template without a backlog in the same queue catches up all 60
  missed runs (so the step did reach the pops).
- D3, backward: after a -1 h step the running worker's clock guard trips within its
  interval (half the lease, here a 4 s lease: 2 s): the worker finishes its job, stops
  with exit status 1, and a worker started with the stepped clock refuses to start. A
  worker with a good clock then drains the rest: no job is lost or run twice, the
  recurring job does not fire again, `stats` still answers (durations measured across
  the step are negative).
- After the forward step the worker's clock guard stops it too (exit status 1, within
  its interval: 30 s at the default 60 s lease, or at its first check a second after
  start); a peek by a client an hour ahead stands in for the pops it may not have made.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.checks import completed, idle, outcome, qless_client, unfinished
from tests.faults.fleet import Fleet
from tests.faults.stepped import step_to
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

Fleets = Callable[..., Fleet]
#: Delays of the D4 jobs: one due every 0.15 s, the first 2 s after the puts.
DELAYS = [2.0 + 0.15 * n for n in range(8)]
LONG_POLL = 30.0
#: The worker and the ledger read the same host clock, and the pop releases a job only once
#: its `now` reaches the due time; an NTP slew (at most 500 ppm) over the ~4 s of the test
#: is the only way a start could look early: 2 ms.
EARLY_SLACK = 0.002
#: Far below the 30 s poll: only the due-time wake-up starts a job this soon.
DUE_WAKE_BOUND = 1.0
INTERVAL = 60
HOUR = 3600
#: The lease of the backward-step test: its worker checks its clock every 2 s.
GUARDED_LEASE = 4
NO_ARGS: dict[str, Any] = {"args": [], "kwargs": {}}


def starts(fleet: Fleet) -> dict[str, list[ledger.Entry]]:
    """The executions started so far, by jid."""
    return ledger.starts(ledger.read(fleet.ledger_dir))


def stepped_worker(fleets: Fleets, server: RedisServer, clock: Path, **kwargs: Any) -> Fleet:
    """One worker on queue `q` whose clock follows the offset in the `clock` file."""
    return fleets(server.url, 1, "q", launcher=("-m", "tests.faults.stepped", str(clock)),
                  **kwargs)


def spawned(client: Client, jid: str) -> int:
    """How many jobs a recurring template has spawned."""
    template = client.recurring(jid)
    assert template is not None
    return template.count


def handed(client: Client, jid: str) -> int:
    """How many times the job was handed back to its queue by a stopping worker."""
    job = client.get_job(jid)
    assert job is not None
    return sum(entry.what == "handed-back" for entry in job.history)


def ms(seconds: float) -> float:
    """Seconds as milliseconds, rounded for the figures."""
    return round(seconds * 1000, 1)


def test_delayed_jobs_start_at_their_due_time_not_at_the_next_poll(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    fleet = fleets(server.url, 1, "q", "--poll-interval", str(LONG_POLL))
    wait_for(lambda: idle(client), 20, what="the worker idling")
    due: dict[str, float] = {}
    for n, delay in enumerate(DELAYS):
        jid = client.queue("q").put("faults.work", NO_ARGS, jid=f"delayed-{n}", delay=delay)
        due[jid] = float(client.redis.zscore("ql:q:q-scheduled", jid) or 0)
    puts_done = time.time()
    runs = wait_for(lambda: (found := starts(fleet)).keys() >= due.keys() and found, 15,
                    what="every delayed job's start")
    late = sorted(runs[jid][0].t - due[jid] for jid in due)
    result = outcome(client, list(due), fleet)
    figures.update(jobs=len(due), delays=f"{DELAYS[0]:g}-{DELAYS[-1]:g}s", poll=LONG_POLL,
                   early_max_ms=ms(max(0.0, -late[0])), late_p50_ms=ms(statistics.median(late)),
                   late_max_ms=ms(late[-1]), lost=len(result.lost),
                   duplicates=result.duplicates)
    # No put event came after the first due time, so every start below is a due wake-up.
    assert puts_done < min(due.values()) - 1
    assert late[0] >= -EARLY_SLACK
    assert late[-1] < DUE_WAKE_BOUND
    assert result.lost == [] and result.duplicates == 0 and result.audit.clean


def test_a_forward_step_spawns_at_most_two_runs_of_a_backlog_1_job(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any], tmp_path: Path,
) -> None:
    client = qless_client(server)
    clock = tmp_path / "offset"
    step_to(clock, 0)
    queue = client.queue("q")
    queue.recur("faults.work", NO_ARGS, INTERVAL, jid="bounded", backlog=1)
    queue.recur("faults.work", NO_ARGS, INTERVAL, jid="unbounded")  # every missed run
    fleet = stepped_worker(fleets, server, clock, restart=False)
    [pid] = fleet.pids()
    wait_for(lambda: starts(fleet).keys() >= {"bounded-1", "unbounded-1"}, 20,
             what="the first runs")
    before = {jid: spawned(client, jid) for jid in ("bounded", "unbounded")}
    step_to(clock, HOUR)
    # Whether the worker pops with the stepped clock before its guard stops it is a race;
    # a pop by a client an hour ahead makes sure the step reaches the templates.
    code = fleet.wait_exit(pid, 40)
    ahead = Client(client.redis, clock=lambda: time.time() + HOUR, worker_name="ahead")
    queue_ahead = ahead.queue("q")
    queue_ahead.peek(1)
    after = {jid: spawned(client, jid) for jid in ("bounded", "unbounded")}
    total = sum(after.values())
    drain = fleets(server.url, 1, "q")
    wait_for(lambda: completed(client) >= total, 15, what="every spawned job's completion")
    jids = [f"{jid}-{n}" for jid, count in after.items() for n in range(1, count + 1)]
    result = outcome(client, jids, drain)
    runs_by_jid = ledger.starts(ledger.read(fleet.ledger_dir) + ledger.read(drain.ledger_dir))
    duplicates = sum(len(found) for found in runs_by_jid.values()) - len(runs_by_jid)
    figures.update(step_s=HOUR, interval=INTERVAL,
                   bounded_spawned=after["bounded"] - before["bounded"],
                   unbounded_spawned=after["unbounded"] - before["unbounded"],
                   stepped_worker_exit=code, jobs=len(jids), lost=len(result.lost),
                   duplicates=duplicates)
    assert 1 <= after["bounded"] - before["bounded"] <= 2
    assert after["unbounded"] - before["unbounded"] in (HOUR // INTERVAL, HOUR // INTERVAL + 1)
    assert code == 1 and "clock skew" in fleet.output()
    assert result.lost == [] and duplicates == 0 and result.audit.clean


def test_a_backward_step_stops_the_worker_and_loses_nothing(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any], tmp_path: Path,
) -> None:
    client = qless_client(server)
    client.config.put("heartbeat", GUARDED_LEASE)
    clock = tmp_path / "offset"
    step_to(clock, 0)
    queue = client.queue("q")
    queue.recur("faults.work", NO_ARGS, INTERVAL, jid="tick", backlog=1)
    fleet = stepped_worker(fleets, server, clock, restart=False)
    [pid] = fleet.pids()
    wait_for(lambda: "tick-1" in starts(fleet), 20, what="the first run")
    long = queue.put("faults.work", {"args": [], "kwargs": {"ms": 2000}}, jid="long")
    wait_for(lambda: long in starts(fleet), 10, what="the long job's start")
    stepped_at = time.monotonic()
    step_to(clock, -HOUR)  # while `long` runs: renewed and completed an hour in the past
    short = [queue.put("faults.work", NO_ARGS, jid=f"short-{n}") for n in range(5)]
    acked = ["tick-1", long, *short]
    code = fleet.wait_exit(pid, 15)
    stopped_after = time.monotonic() - stepped_at
    stepped_output = fleet.output()
    refused = stepped_worker(fleets, server, clock, restart=False)
    refused_code = refused.wait_exit(refused.pids()[0], 20)
    drain = fleets(server.url, 1, "q")
    wait_for(lambda: unfinished(client, acked) == 0, 20, what="every job's end")
    # Keep polling (every 0.2 s) a while: no run of the recurring job may repeat.
    time.sleep(1.5)
    result = outcome(client, acked, drain)
    runs_by_jid = ledger.starts(ledger.read(fleet.ledger_dir) + ledger.read(drain.ledger_dir))
    duplicates = sum(len(found) for found in runs_by_jid.values()) - len(runs_by_jid)
    waits, runs = day_stats(client, [time.time(), time.time() - HOUR])
    tracebacks = stepped_output.count("Traceback") + drain.output().count("Traceback")
    handed_back = sum(handed(client, jid) for jid in acked)
    figures.update(step_s=-HOUR, lease=GUARDED_LEASE, stepped_worker_exit=code,
                   stopped_after=round(stopped_after, 1), restarted_worker_exit=refused_code,
                   handed_back=handed_back, jobs=len(acked), lost=len(result.lost),
                   duplicates=duplicates,
                   tick_spawned=spawned(client, "tick"), wait_samples=waits[0],
                   wait_off_histogram=waits[1], run_samples=runs[0],
                   run_off_histogram=runs[1], tracebacks=tracebacks)
    # The long job ends (<= 2 s), then the guard's next check (<= 2 s) stops the worker.
    assert code == 1 and stopped_after <= 2 + GUARDED_LEASE / 2 + 1.5
    assert "clock skew" in stepped_output and "-3600" in stepped_output
    assert refused_code != 0 and "clock skew" in refused.output()
    assert result.lost == [] and duplicates == 0 and result.audit.clean
    assert runs_by_jid.keys() == set(acked)
    assert spawned(client, "tick") == 1 and client.get_job("tick-2") is None
    # A job popped ahead and handed back at the stop is popped again: one wait sample more.
    assert runs[0] == len(acked) and waits[0] == len(acked) + handed_back
    assert tracebacks == 0


def day_stats(client: Client, moments: list[float]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(samples, samples in no histogram bucket) of wait and run, over the days of `moments`."""
    days = {int(moment // 86400) * 86400 for moment in moments}
    found = [client.queue("q").stats(date=day) for day in days]
    waits = sum(s.wait.count for s in found), sum(s.wait.count - sum(s.wait.histogram)
                                                  for s in found)
    runs = sum(s.run.count for s in found), sum(s.run.count - sum(s.run.histogram)
                                                for s in found)
    return waits, runs
