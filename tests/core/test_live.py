"""Live figures: throughput added per minute, depth sampled once a minute, the hour read back."""

from __future__ import annotations

from collections import Counter

import redis

from django_qless.core import Client, keys
from django_qless.core.live import (
    KEEP,
    MINUTES,
    SPANS,
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


def test_throughput_is_also_kept_per_15_minutes_and_per_hour(client: Client) -> None:
    add(client, {("q", "completed"): 3, ("q", "ms"): 300}, NOW)
    add(client, {("q", "completed"): 2, ("q", "failed"): 1}, NOW + 60)  # same quarter, hour
    add(client, {("q", "completed"): 4}, NOW - 900)  # the quarter before
    quarter = SPANS["24h"].slot_of(NOW)
    hour = SPANS["7d"].slot_of(NOW)
    assert client.redis.hgetall(keys.throughput_slot("15m", quarter)) == {
        "completed:q": "5", "failed:q": "1", "ms:q": "300"}
    assert 24 * 3600 < client.redis.ttl(keys.throughput_slot("15m", quarter)) <= 25 * 3600
    assert 7 * 86400 < client.redis.ttl(keys.throughput_slot("1h", hour)) <= 8 * 86400
    day = read_history(client, NOW + 60, span="24h")
    assert len(day.minutes) == 96 and day.span is SPANS["24h"]
    assert day.minutes[-1].minute == quarter and day.minutes[-1].seconds == 900
    assert day.minutes[-1].start == quarter * 900.0
    assert day.minutes[-1].jobs("completed") == 5 and day.minutes[-2].jobs("completed") == 4
    assert day.minutes[-1].ran_ms("q") == 300
    week = read_history(client, NOW + 60, span="7d")
    assert len(week.minutes) == 168 and week.minutes[-1].seconds == 3600
    assert sum(slot.jobs("completed") for slot in week.minutes) == 9


def test_adding_throughput_is_one_pipeline_whatever_the_spans(client: Client) -> None:
    pipe = client.redis.pipeline()
    add_throughput(pipe, Counter({("q", "completed"): 1, ("q", "failed"): 2}), NOW)
    # Each span: one HINCRBY per field and one EXPIRE, all in the caller's round trip.
    assert len(pipe.command_stack) == len(SPANS) * 3
    pipe.execute()


def test_depth_is_sampled_into_the_coarser_slots_once_each(client: Client) -> None:
    with client.redis.pipeline() as pipe:
        claim_depth(pipe, NOW)
        pipe.execute()
    fill_depth(client, [QueueCounts("q", waiting=4)], NOW)
    fill_depth(client, [QueueCounts("q", waiting=9)], NOW + 60)  # unclaimed: not written
    read_history(client, NOW + 120, offer=[QueueCounts("q", waiting=7)])
    quarter = SPANS["24h"].slot_of(NOW)
    # The first sample of the quarter and the hour stays; later ones do not replace it.
    assert read_history(client, NOW, span="24h").minutes[-1].depth("waiting") == 4
    assert read_history(client, NOW, span="7d").minutes[-1].depth("waiting") == 4
    assert 24 * 3600 < client.redis.ttl(keys.depth_slot("15m", quarter)) <= 25 * 3600
    assert 7 * 86400 < client.redis.ttl(
        keys.depth_slot("1h", SPANS["7d"].slot_of(NOW))) <= 8 * 86400
    # A reader alone (no worker) samples the coarser slots too.
    later = NOW + 3600
    read_history(client, later, offer=[QueueCounts("q", waiting=2)], span="7d")
    assert read_history(client, later, span="24h").minutes[-1].depth("waiting") == 2
    assert read_history(client, later, span="7d").minutes[-1].depth("waiting") == 2
