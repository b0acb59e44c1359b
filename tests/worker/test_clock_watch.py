"""A clock stepped while the worker runs stops it (exit status 1), as the start-up check would."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from django_qless.core import Client
from django_qless.worker import Worker, WorkerOptions, health
from tests.redis_harness import RedisServer

from .conftest import in_thread, job_state


@pytest.mark.parametrize("step", [-3600.0, 3600.0])
def test_a_clock_stepped_while_running_stops_the_worker(
    redis_server: RedisServer, put: Callable[..., str], monkeypatch: pytest.MonkeyPatch,
    step: float,
) -> None:
    monkeypatch.setattr(health, "CLOCK_CHECK_MIN", 0.0)
    monkeypatch.setattr(health, "CLOCK_CHECK_MAX", 0.1)
    offset = [0.0]
    client = Client(redis_server.client(), clock=lambda: time.time() + offset[0])
    jids = [put("worker.noop") for _ in range(3)]
    worker = Worker(WorkerOptions(queues=("q",), poll_interval=0.1, handle_signals=False),
                    client=client)
    status: list[int] = []
    thread = in_thread(lambda: status.append(worker.run()))
    deadline = time.monotonic() + 5
    while any(job_state(client, jid) != "complete" for jid in jids):
        assert time.monotonic() < deadline, "the jobs were not run"
        time.sleep(0.02)
    assert thread.is_alive()  # checked its clock several times, and found it right
    offset[0] = step
    thread.join(5)
    assert not thread.is_alive() and status == [1]
    assert worker.stop.reason.startswith("clock skew:")
    assert f"{step:+.1f} s off Redis' TIME" in worker.stop.reason


def test_a_check_waits_for_half_the_shortest_lease(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = Client(redis_server.client(), clock=time.time)
    client.config.set("heartbeat", 10)
    watch = health.ClockWatch(client, [client.queue("q")])
    assert watch.problem() is None  # not due yet: the start-up check has just run
    measured: list[Client] = []

    def measure(checked: Client) -> float:
        measured.append(checked)
        return 0.0

    monkeypatch.setattr(health, "measure_skew", measure)
    assert watch.problem() is None and measured == []
    watch._due = 0.0  # due now
    assert watch.problem() is None and measured == [client]
    assert 4.9 < watch._due - time.monotonic() <= 5.0  # half the 10 s lease


def test_a_slow_round_trip_is_not_taken_for_skew(redis_server: RedisServer) -> None:
    readings = iter([time.time() - 5.0, time.time() + 5.0])  # Redis answered 10 s late
    slow = Client(redis_server.client(), clock=lambda: next(readings))
    assert health.measure_skew(slow) == 0.0
    ahead = Client(redis_server.client(), clock=lambda: time.time() + 30)
    assert health.measure_skew(ahead) == pytest.approx(30, abs=0.5)
    behind = Client(redis_server.client(), clock=lambda: time.time() - 30)
    assert health.measure_skew(behind) == pytest.approx(-30, abs=0.5)
