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
- D3, backward: after a -1 h step the worker keeps working: no job is lost or run twice,
  the recurring job does not fire again, `stats` still answers (durations measured across
  the step are negative). The skew guard runs only at start-up: the running worker does
  not notice the step, a worker started with the stepped clock refuses to start.
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
from tests.faults.checks import completed, outcome, qless_client, unfinished
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
NO_ARGS: dict[str, Any] = {"args": [], "kwargs": {}}


def idle(client: Client) -> bool:
    """True once a worker listens for puts (it does so only when its queues are empty)."""
    return dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0) >= 1


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
    fleet = stepped_worker(fleets, server, clock)
    wait_for(lambda: starts(fleet).keys() >= {"bounded-1", "unbounded-1"}, 20,
             what="the first runs")
    before = {jid: spawned(client, jid) for jid in ("bounded", "unbounded")}
    step_to(clock, HOUR)
    wait_for(lambda: spawned(client, "unbounded") >= before["unbounded"] + HOUR // INTERVAL - 1,
             15, what="the catch-up of the template without backlog")
    # Keep polling (every 0.2 s) a while: the catch-up is over, nothing more may spawn.
    time.sleep(1.5)
    after = {jid: spawned(client, jid) for jid in ("bounded", "unbounded")}
    total = sum(after.values())
    wait_for(lambda: completed(client) >= total, 15, what="every spawned job's completion")
    jids = [f"{jid}-{n}" for jid, count in after.items() for n in range(1, count + 1)]
    result = outcome(client, jids, fleet)
    figures.update(step_s=HOUR, interval=INTERVAL,
                   bounded_spawned=after["bounded"] - before["bounded"],
                   unbounded_spawned=after["unbounded"] - before["unbounded"],
                   jobs=len(jids), lost=len(result.lost), duplicates=result.duplicates,
                   worker_running=fleet.restarts == 0 and bool(fleet.live_pids()))
    assert 1 <= after["bounded"] - before["bounded"] <= 2
    assert after["unbounded"] - before["unbounded"] in (HOUR // INTERVAL, HOUR // INTERVAL + 1)
    assert result.lost == [] and result.duplicates == 0 and result.audit.clean
    assert fleet.restarts == 0 and fleet.live_pids()


def test_a_backward_step_loses_nothing_and_spawns_nothing_twice(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any], tmp_path: Path,
) -> None:
    client = qless_client(server)
    clock = tmp_path / "offset"
    step_to(clock, 0)
    queue = client.queue("q")
    queue.recur("faults.work", NO_ARGS, INTERVAL, jid="tick", backlog=1)
    fleet = stepped_worker(fleets, server, clock)
    wait_for(lambda: "tick-1" in starts(fleet), 20, what="the first run")
    long = queue.put("faults.work", {"args": [], "kwargs": {"ms": 2000}}, jid="long")
    wait_for(lambda: long in starts(fleet), 10, what="the long job's start")
    step_to(clock, -HOUR)  # while `long` runs: renewed and completed an hour in the past
    short = [queue.put("faults.work", NO_ARGS, jid=f"short-{n}") for n in range(5)]
    acked = ["tick-1", long, *short]
    wait_for(lambda: unfinished(client, acked) == 0, 20, what="every job's end")
    # Keep polling (every 0.2 s) a while, an hour before the first run: no run may repeat.
    time.sleep(1.5)
    result = outcome(client, acked, fleet)
    waits, runs = day_stats(client, [time.time(), time.time() - HOUR])
    refused = stepped_worker(fleets, server, clock, restart=False)
    code = refused.wait_exit(refused.pids()[0], 20)
    output = refused.output()
    tracebacks = fleet.output().count("Traceback")
    figures.update(step_s=-HOUR, jobs=len(acked), lost=len(result.lost),
                   duplicates=result.duplicates, tick_spawned=spawned(client, "tick"),
                   wait_samples=waits[0], wait_off_histogram=waits[1],
                   run_samples=runs[0], run_off_histogram=runs[1], tracebacks=tracebacks,
                   running_worker="kept working", restarted_worker_exit=code)
    assert result.lost == [] and result.duplicates == 0 and result.audit.clean
    assert spawned(client, "tick") == 1 and client.get_job("tick-2") is None
    assert waits[0] == runs[0] == len(acked)
    assert fleet.restarts == 0 and fleet.live_pids() and tracebacks == 0
    # The skew guard runs only at start-up: the stepped clock is refused at the next start.
    assert code != 0 and "clock skew" in output and "-3600" in output


def day_stats(client: Client, moments: list[float]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(samples, samples in no histogram bucket) of wait and run, over the days of `moments`."""
    days = {int(moment // 86400) * 86400 for moment in moments}
    found = [client.queue("q").stats(date=day) for day in days]
    waits = sum(s.wait.count for s in found), sum(s.wait.count - sum(s.wait.histogram)
                                                  for s in found)
    runs = sum(s.run.count for s in found), sum(s.run.count - sum(s.run.histogram)
                                                for s in found)
    return waits, runs
