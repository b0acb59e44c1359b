"""pop.first, the extension pop over several queues: the first that hands jobs out wins."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.lua.helpers import T0, expect_error, get, listish, pop, put


def pop_first(lua: Any, now: float, *queues: str, count: int = 1) -> list[Any]:
    """Call pop.first for worker w1 and decode the jobs."""
    return listish(lua.json("pop.first", now, "w1", count, *queues))


def test_pops_from_the_first_queue_in_the_order_given_that_has_jobs(lua):
    put(lua, T0, "b1", "b")
    put(lua, T0 + 0.5, "b2", "b")
    put(lua, T0, "c1", "c")
    jobs = pop_first(lua, T0 + 1, "a", "b", "c", count=5)
    assert [(job["jid"], job["queue"], job["worker"]) for job in jobs] == [
        ("b1", "b", "w1"), ("b2", "b", "w1")]
    assert get(lua, "b1")["state"] == "running" and get(lua, "c1")["state"] == "waiting"
    assert [job["jid"] for job in pop_first(lua, T0 + 2, "a", "b", "c")] == ["c1"]
    assert pop_first(lua, T0 + 3, "a", "b", "c") == []


def test_a_job_popped_this_way_is_exactly_what_pop_would_give(lua, redis_client):
    put(lua, T0, "j1", "b")
    put(lua, T0, "j2", "b")
    (first,) = pop_first(lua, T0 + 1, "a", "b")
    (second,) = pop(lua, T0 + 1, "b", "w1")
    for job in (first, second):
        del job["jid"], job["history"]
    assert first == second
    assert redis_client.zscore("ql:workers", "w1") is not None


def test_paused_queues_and_concurrency_caps_are_skipped_like_pop(lua):
    put(lua, T0, "a1", "a")
    put(lua, T0, "b1", "b")
    lua("pause", T0, "a")
    assert [job["jid"] for job in pop_first(lua, T0 + 1, "a", "b")] == ["b1"]
    lua("unpause", T0, "a")
    lua("config.set", T0, "a-max-concurrency", 1)
    put(lua, T0 + 0.5, "a2", "a")
    assert [job["jid"] for job in pop_first(lua, T0 + 2, "a", "b", count=5)] == ["a1"]
    assert pop_first(lua, T0 + 3, "a", "b") == []  # a is at its cap, b is empty


def test_due_scheduled_jobs_are_released_as_pop_does(lua):
    put(lua, T0, "later", "a", delay=10)
    assert pop_first(lua, T0 + 5, "a") == []
    assert [job["jid"] for job in pop_first(lua, T0 + 11, "a")] == ["later"]


def test_bad_arguments_are_refused_before_any_queue_is_popped(lua, keyspace):
    put(lua, T0, "j1", "q")
    before = keyspace()
    expect_error(lua, r'Pop\.first\(\): Arg "queue" missing or empty', "pop.first", T0,
                 "w1", 1, "q", "")
    expect_error(lua, r'Pop\.first\(\): Arg "queue" missing', "pop.first", T0, "w1", 1)
    expect_error(lua, r'Pop\.first\(\): Arg "count" missing or not a number: many',
                 "pop.first", T0, "w1", "many", "q")
    expect_error(lua, r'Pop\.first\(\): Arg "ahead" missing or not a number: one',
                 "pop.first", T0, "w1", "ahead", "one", 0, 1, "q")
    expect_error(lua, r'Pop\.first\(\): Arg "keep" missing or not a number: q',
                 "pop.first", T0, "w1", "ahead", 1, "q")
    expect_error(lua, r'Pop\.first\(\): Arg "count" missing or not a number: q',
                 "pop.first", T0, "w1", "ahead", 1, 0, "q")
    assert keyspace() == before


def jids(jobs: list[Any]) -> list[str]:
    """The jids of popped jobs, in order."""
    return [job["jid"] for job in jobs]


def test_jobs_asked_ahead_are_taken_only_as_far_as_keep_jobs_stay_waiting(lua):
    for n in range(5):
        put(lua, T0 + n / 10, f"j{n}", "q")
    # 3 asked, the last 2 ahead, keep 2: 1 for a slot, and both ahead (2 stay waiting).
    assert jids(lua.json("pop.first", T0 + 1, "w1", "ahead", 2, 2, 3, "q")) == [
        "j0", "j1", "j2"]
    # 2 wait now, keep 1: the slot's job only; the other stays for a slot that is free.
    assert jids(lua.json("pop.first", T0 + 2, "w1", "ahead", 1, 1, 2, "q")) == ["j3"]
    # Ahead only, keep 0: the last job is taken; keep 1: left waiting.
    assert listish(lua.json("pop.first", T0 + 3, "w1", "ahead", 1, 1, 1, "q")) == []
    assert get(lua, "j4")["state"] == "waiting"
    assert jids(lua.json("pop.first", T0 + 4, "w1", "ahead", 1, 0, 1, "q")) == ["j4"]


def test_jobs_asked_only_ahead_are_not_taken_from_a_later_queue(lua, redis_client):
    put(lua, T0, "a1", "a")
    put(lua, T0, "b1", "b")
    put(lua, T0 + 0.5, "b2", "b")
    assert listish(lua.json("pop.first", T0 + 1, "w1", "ahead", 1, 1, 1, "a", "b")) == []
    assert redis_client.zscore("ql:workers", "w1") is not None  # as any pop: registered
    # With one job for a slot, the first queue that hands one out gives it.
    assert jids(lua.json("pop.first", T0 + 2, "w1", "ahead", 1, 1, 2, "a", "b")) == ["a1"]
    assert jids(lua.json("pop.first", T0 + 3, "w1", "ahead", 1, 0, 2, "a", "b")) == [
        "b1", "b2"]


def test_a_queue_holding_only_an_expired_lock_is_popped_not_passed_over(lua):
    put(lua, T0, "a1", "a")
    put(lua, T0, "b1", "b")
    pop(lua, T0, "a", "w2")  # a's only job runs under w2's lease (60 s), which expires
    # Before the lease ends queue a has nothing to hand out: b's job comes first.
    assert [job["jid"] for job in pop_first(lua, T0 + 30, "a", "b")] == ["b1"]
    put(lua, T0 + 31, "b2", "b")
    # After it, a's pop tells w2 (the grace period starts) and hands nothing out yet, as
    # pop does; the job is a's to hand out once the grace period is over.
    assert [job["jid"] for job in pop_first(lua, T0 + 1000, "a", "b")] == ["b2"]
    assert get(lua, "a1")["worker"] == "w2"
    assert [job["jid"] for job in pop_first(lua, T0 + 1020, "a", "b")] == ["a1"]
    assert get(lua, "a1")["worker"] == "w1"


def test_a_queue_whose_jobs_all_wait_elsewhere_is_passed_over(lua):
    put(lua, T0, "later", "a", delay=100)
    put(lua, T0, "b1", "b")
    # a holds a scheduled job not yet due: a is looked at (and gives nothing), then b.
    assert [job["jid"] for job in pop_first(lua, T0 + 1, "a", "b")] == ["b1"]
    assert get(lua, "later")["state"] == "scheduled"


def test_an_empty_queue_costs_one_read(lua, redis_client):
    put(lua, T0, "j1", "last")
    empties = [f"empty{n}" for n in range(10)]
    pop_first(lua, T0 + 1, "warm-up", "last")  # the script loaded, its modules known
    put(lua, T0 + 2, "j2", "last")
    redis_client.config_resetstat()
    (job,) = pop_first(lua, T0 + 3, *empties, "last")
    stats = redis_client.info("commandstats")
    assert job["jid"] == "j2"
    # One EXISTS for each empty queue, then the queue with the job's and its pop's own; no
    # look at the locks of a queue that has none.
    assert stats["cmdstat_exists"]["calls"] == len(empties) + 2
    assert "cmdstat_zrange" not in stats


@pytest.mark.parametrize("seed", range(12))
def test_the_first_queue_that_hands_a_job_out_wins_whatever_lies_before_it(lua, seed):
    """Queues in random states: pop.first pops from the first one whose job can go now,
    whatever empty, not-yet-due and running queues come before it, and touches no other."""
    rng = random.Random(seed)
    states = ["empty", "empty", "empty", "later", "running", "waiting", "due"]
    queues = [f"s{seed}-q{n}" for n in range(rng.randint(1, 40))]
    layout = {queue: rng.choice(states) for queue in queues}
    for queue, state in layout.items():
        if state == "waiting":
            put(lua, T0, f"{queue}-job", queue)
        elif state in ("later", "due"):
            put(lua, T0, f"{queue}-job", queue, delay=500 if state == "later" else 5)
        elif state == "running":
            put(lua, T0, f"{queue}-job", queue)
            pop(lua, T0, queue, "w2")
    expected = next((q for q in queues if layout[q] in ("waiting", "due")), None)
    jobs = pop_first(lua, T0 + 10, *queues, count=3)
    assert [job["queue"] for job in jobs] == ([expected] if expected else [])
    for queue, state in layout.items():
        if queue != expected:
            want = {"empty": None, "later": "scheduled", "running": "running",
                    "waiting": "waiting", "due": "scheduled"}[state]
            assert (get(lua, f"{queue}-job") or {}).get("state") == want
