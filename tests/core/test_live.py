"""Live figures: throughput added per minute, depth sampled once a minute, the hour read back."""

from __future__ import annotations

from collections import Counter

import redis

from django_qless.core import Client, keys
from django_qless.core.live import (
    KEEP,
    MINUTES,
    Depth,
    add_throughput,
    claim_depth,
    fill_depth,
    minute_of,
    read_history,
)
from django_qless.core.records import QueueCounts

NOW = 1_700_000_010.0  # 30 s into a minute


def add(client: Client, counts: dict[tuple[str, str], int], now: float) -> None:
    """Add throughput in a pipeline of its own."""
    pipe = client.redis.pipeline()
    add_throughput(pipe, Counter(counts), now)
    pipe.execute()


def test_throughput_adds_up_by_minute_queue_and_outcome(client: Client) -> None:
    add(client, {("q", "completed"): 3, ("q", "failed"): 1}, NOW)
    add(client, {("q", "completed"): 2, ("other", "retried"): 4}, NOW + 10)
    add(client, {("q", "completed"): 7}, NOW - 60)
    add(client, {("q", "ms"): 1500, ("other", "ms"): 20}, NOW)
    history = read_history(client, NOW)
    assert len(history.minutes) == MINUTES
    current, previous = history.minutes[-1], history.minutes[-2]
    assert current.minute == minute_of(NOW) and previous.minute == minute_of(NOW) - 1
    assert current.jobs("completed", "q") == 5 and current.jobs("failed", "q") == 1
    assert current.jobs("retried") == 4 and current.jobs("completed") == 5
    assert previous.jobs("completed") == 7
    assert current.ran_ms("q") == 1500 and current.ran_ms() == 1520 and previous.ran_ms() == 0
    assert history.queues() == ["other", "q"]
    assert 0 < client.redis.ttl(keys.throughput(minute_of(NOW))) <= KEEP


def test_nothing_added_writes_no_key(client: Client, redis_client: redis.Redis) -> None:
    add(client, {("q", "completed"): 0}, NOW)
    assert redis_client.keys("*") == []


def test_the_hour_ends_with_the_current_minute(client: Client) -> None:
    add(client, {("q", "completed"): 1}, NOW - MINUTES * 60)  # just out of the hour
    add(client, {("q", "completed"): 2}, NOW - (MINUTES - 1) * 60)  # the first minute shown
    history = read_history(client, NOW)
    assert [minute.jobs("completed") for minute in history.minutes][0] == 2
    assert sum(minute.jobs("completed") for minute in history.minutes) == 2


def test_the_depth_sample_is_claimed_once_per_minute(client: Client) -> None:
    claims = []
    for _ in range(3):  # three workers in the same minute
        pipe = client.redis.pipeline()
        claim_depth(pipe, NOW)
        claims.append(bool(pipe.execute()[-1]))
    assert claims == [True, False, False]
    assert read_history(client, NOW).minutes[-1].depths is None  # claimed, not filled yet
    fill_depth(client, [QueueCounts("q", waiting=4, running=1, stalled=2)], NOW)
    minute = read_history(client, NOW).minutes[-1]
    assert minute.depths == {"q": Depth(waiting=4, running=1, stalled=2)}
    assert minute.depth("waiting") == 4 and minute.depth("stalled", "q") == 2
    assert minute.depth("waiting", "gone") == 0
    assert 0 < client.redis.ttl(keys.depth(minute_of(NOW))) <= KEEP


def test_a_reader_offers_the_sample_unless_one_was_taken(client: Client) -> None:
    history = read_history(client, NOW, offer=[QueueCounts("q", waiting=9, scheduled=3)])
    assert history.minutes[-1].depths == {"q": Depth(waiting=9, scheduled=3)}
    again = read_history(client, NOW + 5, offer=[QueueCounts("q", waiting=1)])
    assert again.minutes[-1].depth("waiting") == 9  # the first sample of the minute stays
    assert again.minutes[-2].depths is None and again.minutes[-2].depth("waiting") is None


def test_a_reader_fills_in_a_sample_claimed_and_left_empty(client: Client) -> None:
    pipe = client.redis.pipeline()
    claim_depth(pipe, NOW)  # a worker that died before filling it in
    pipe.execute()
    history = read_history(client, NOW, offer=(q for q in [QueueCounts("q", waiting=2)]))
    assert history.minutes[-1].depths == {"q": Depth(waiting=2)}
    assert read_history(client, NOW).minutes[-1].depth("waiting") == 2
    assert 0 < client.redis.ttl(keys.depth(minute_of(NOW))) <= KEEP


def test_malformed_values_are_skipped(client: Client, redis_client: redis.Redis) -> None:
    minute = minute_of(NOW)
    redis_client.hset(keys.throughput(minute), mapping={
        "completed:q": "2", "completed:bad": "x", "nonsense:q": "5", "completed:": "1",
    })
    redis_client.set(keys.depth(minute), "{not json")
    current = read_history(client, NOW).minutes[-1]
    assert current.finished == {"q": {"completed": 2}}
    assert current.depths is None
