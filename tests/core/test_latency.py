"""Queue latency: the wait of the job a queue hands out next, read without the script."""

from __future__ import annotations

import pytest

from django_qless.core import Client
from django_qless.core.latency import latencies
from tests.support import FakeClock

KLASS = "app.jobs.noop"


def test_latency_is_the_wait_of_the_next_job_to_pop(client: Client, clock: FakeClock) -> None:
    queue = client.queue("emails")
    queue.put(KLASS, {})
    clock.advance(30)
    queue.put(KLASS, {})
    clock.advance(15)
    assert latencies(client, ["emails"])["emails"] == pytest.approx(45, abs=0.01)
    queue.pop()  # the oldest goes: the next one has waited 15 s
    assert latencies(client, ["emails"])["emails"] == pytest.approx(15, abs=0.01)


def test_a_higher_priority_job_pops_first_so_its_wait_is_the_latency(
    client: Client, clock: FakeClock,
) -> None:
    queue = client.queue("emails")
    queue.put(KLASS, {}, priority=0)
    clock.advance(100)
    queue.put(KLASS, {}, priority=10)
    clock.advance(5)
    assert latencies(client, ["emails"])["emails"] == pytest.approx(5, abs=0.01)


def test_queues_without_waiting_jobs_have_no_latency(client: Client, clock: FakeClock) -> None:
    client.queue("later").put(KLASS, {}, delay=60)
    client.queue("busy").put(KLASS, {})
    client.queue("busy").pop()
    clock.advance(10)
    client.queue("emails").put(KLASS, {})
    assert latencies(client, ["later", "busy", "emails", "unknown"]) == {"emails": 0.0}
    assert latencies(client, []) == {}
