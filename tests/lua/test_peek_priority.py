"""peek and priority ordering (protocol §1.3, §3.2, §3.3)."""

from __future__ import annotations

import pytest

from tests.lua.helpers import T0, expect_error, get, jids, peek, pop, put, whats


def test_higher_priority_first_then_fifo(lua):
    for index, priority in enumerate([0, 5, 0, 5, 10]):
        put(lua, T0 + index, f"p{index}", priority=priority)
    assert jids(pop(lua, T0 + 10, "q", "w1", 5)) == ["p4", "p1", "p3", "p0", "p2"]


def test_peek_shows_the_same_order_without_popping(lua, redis_client):
    for index, priority in enumerate([0, 5, 0, 5, 10]):
        put(lua, T0 + index, f"p{index}", priority=priority)
    assert jids(peek(lua, T0 + 10, "q", 5)) == ["p4", "p1", "p3", "p0", "p2"]
    assert redis_client.zcard("ql:q:q-work") == 5
    assert redis_client.hget("ql:j:p4", "state") == "waiting"
    assert whats(redis_client, "p4") == ["put"]


def test_negative_priority_pops_last(lua):
    put(lua, T0, "low", priority=-25)
    put(lua, T0 + 1, "normal")
    put(lua, T0 + 2, "high", priority=25)
    assert jids(pop(lua, T0 + 3, "q", "w1", 3)) == ["high", "normal", "low"]


def test_peek_of_nothing_replies_empty_json_object(lua):
    assert lua("peek", T0, "q", 10) == "{}"


def test_peek_count_limits(lua):
    for index in range(3):
        put(lua, T0 + index, f"j{index}")
    assert jids(peek(lua, T0 + 5, "q", 2)) == ["j0", "j1"]


def test_peek_releases_due_scheduled_jobs(lua, redis_client):
    put(lua, T0, "j1", delay=10)
    assert peek(lua, T0 + 5) == []
    assert jids(peek(lua, T0 + 10)) == ["j1"]
    assert redis_client.zscore("ql:q:q-scheduled", "j1") is None
    assert redis_client.zscore("ql:q:q-work", "j1") is not None
    assert redis_client.hget("ql:j:j1", "state") == "waiting"


def test_peek_lists_expired_locks_first(lua):
    put(lua, T0, "old")
    pop(lua, T0, "q", "w1")
    put(lua, T0 + 1, "new", priority=100)
    assert jids(peek(lua, T0 + 61, "q", 5)) == ["old", "new"]
    assert get(lua, "old")["state"] == "running"


def test_priority_replies_truncated_integer_and_stores_float(lua, redis_client):
    put(lua, T0, "j1")
    reply = lua("priority", T0, "j1", 7.5)
    assert reply == 7
    assert isinstance(reply, int)
    assert redis_client.hget("ql:j:j1", "priority") == "7.5"


def test_priority_rescores_waiting_job_with_zero_time(lua, redis_client):
    put(lua, T0, "a", priority=3)
    put(lua, T0 + 1, "b", priority=3)
    lua("priority", T0 + 2, "b", 3)
    assert redis_client.zscore("ql:q:q-work", "b") == 3
    assert jids(pop(lua, T0 + 3, "q", "w1", 2)) == ["b", "a"]


def test_priority_on_running_job_changes_field_only(lua, redis_client):
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    assert lua("priority", T0, "j1", 9) == 9
    assert redis_client.hget("ql:j:j1", "priority") == "9"
    assert redis_client.zscore("ql:q:q-work", "j1") is None
    assert redis_client.hget("ql:j:j1", "state") == "running"


def test_priority_of_unknown_job(lua):
    expect_error(lua, r"Priority\(\): Job nope does not exist", "priority", T0, "nope", 1)


@pytest.mark.parametrize("value", ["abc", None])
def test_priority_not_a_number(lua, value):
    put(lua, T0, "j1")
    args = ["j1"] if value is None else ["j1", value]
    pattern = r'Priority\(\): Arg "priority" missing or not a number.*'
    expect_error(lua, pattern, "priority", T0, *args)


def test_timeout_puts_job_at_front_of_queue(lua):
    put(lua, T0, "a")
    put(lua, T0, "b", priority=50)
    pop(lua, T0, "q", "w1")
    put(lua, T0, "c", priority=50)
    assert lua("timeout", T0 + 1, "b") is None
    assert jids(pop(lua, T0 + 2, "q", "w2", 3)) == ["b", "c", "a"]


def test_released_scheduled_jobs_are_scored_with_release_time(lua, redis_client):
    put(lua, T0, "j1", delay=10, priority=2)
    peek(lua, T0 + 20)
    score = redis_client.zscore("ql:q:q-work", "j1")
    assert score == pytest.approx(2 - (T0 + 20) / 1e10, abs=1e-12)


def test_scheduled_release_is_bounded_by_the_count(lua, redis_client):
    for index in range(3):
        put(lua, T0 + index, f"s{index}", delay=10)
    assert jids(pop(lua, T0 + 20, "q", "w1", 1)) == ["s0"]
    assert redis_client.zrange("ql:q:q-scheduled", 0, -1) == ["s1", "s2"]
