"""complete.pop, the extension that completes a job and pops the next in one call."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from tests.lua.helpers import T0, expect_error, get, listish, pop, put


def complete_pop(lua: Any, now: float, jid: str, *queues: str, count: int = 1,
                 worker: str = "w1", queue: str = "q") -> tuple[str, list[Any]]:
    """Call complete.pop and decode its two halves."""
    state, jobs = lua("complete.pop", now, jid, worker, queue, "{}", count, *queues)
    return state, listish(json.loads(jobs))


def test_completes_then_pops_from_the_first_queue_that_has_jobs(lua):
    put(lua, T0, "done", "q")
    put(lua, T0, "b1", "b")
    put(lua, T0 + 0.5, "b2", "b")
    pop(lua, T0 + 1, "q", "w1")
    state, jobs = complete_pop(lua, T0 + 2, "done", "a", "b", count=5)
    assert state == "complete"
    assert get(lua, "done")["state"] == "complete"
    assert [(job["jid"], job["state"], job["worker"]) for job in jobs] == [
        ("b1", "running", "w1"), ("b2", "running", "w1")]


def test_the_same_writes_and_replies_as_complete_then_pop_first(lua, redis_client):
    def run(how: str) -> tuple[Any, list[Any], dict[bytes, Any]]:
        redis_client.flushdb()
        put(lua, T0, "j1", "q")
        put(lua, T0 + 0.5, "j3", "q", tags='["t"]')
        put(lua, T0 + 0.6, "j2", "q", depends='["j3"]')
        pop(lua, T0 + 1, "q", "w1")
        if how == "two calls":
            state, jobs = [lua("complete", T0 + 2, "j1", "w1", "q", "{}"),
                           lua("pop.first", T0 + 2, "w1", 1, "q", "other")]
        else:
            shape = ["lean"] if how == "lean" else []
            state, jobs = lua("complete.pop", T0 + 2, "j1", "w1", "q", "{}", *shape, 1, "q",
                              "other")
        keys = sorted(redis_client.scan_iter(count=1000))
        return state, jobs, {key: redis_client.dump(key) for key in keys}

    alone = run("two calls")
    assert run("one call") == alone  # replies byte for byte, and every key
    state, lean, written = run("lean")
    assert (state, written) == (alone[0], alone[2])
    # Lean: the popped jobs are pop.first's without their history and dependents, with the
    # seconds each waited (j3 was put at T0 + 0.5, popped at T0 + 2).
    full = json.loads(alone[1])
    assert [job["jid"] for job in full] == ["j3"]
    assert full[0]["dependents"] == ["j2"] and len(full[0]["history"]) == 2
    assert "waited" not in full[0]
    popped = json.loads(lean)
    assert [job.pop("waited") for job in popped] == [pytest.approx(1.5)]
    assert popped == [
        {k: v for k, v in job.items() if k not in ("history", "dependents")} for job in full]


def test_an_empty_pop_still_completes(lua):
    put(lua, T0, "only", "q")
    pop(lua, T0 + 1, "q", "w1")
    assert complete_pop(lua, T0 + 2, "only", "q") == ("complete", [])


def test_jobs_asked_ahead_leave_the_queues_last_jobs_waiting(lua):
    put(lua, T0, "done", "q")
    pop(lua, T0 + 1, "q", "w1")
    for n in range(3):
        put(lua, T0 + 1 + n / 10, f"j{n}", "q")
    # 3 asked, 2 of them ahead, keep 1: a job for the slot and 1 ahead (1 stays waiting).
    state, jobs = lua("complete.pop", T0 + 2, "done", "w1", "q", "{}", "lean", "ahead", 2, 1,
                      3, "q")
    assert state == "complete"
    assert [job["jid"] for job in listish(json.loads(jobs))] == ["j0", "j1"]
    assert get(lua, "j2")["state"] == "waiting"


def test_a_refused_completion_pops_nothing(lua, keyspace):
    put(lua, T0, "mine", "q")
    put(lua, T0 + 0.5, "next", "q")
    pop(lua, T0 + 1, "q", "w1")
    lua("timeout", T0 + 2, "mine")
    before = keyspace()
    expect_error(lua, r"Complete\(\): Job mine is not currently running: stalled",
                 "complete.pop", T0 + 3, "mine", "w1", "q", "{}", 1, "q")
    assert keyspace() == before
    assert get(lua, "next")["state"] == "waiting"


def test_bad_pop_arguments_are_refused_before_the_completion_writes(lua, keyspace):
    put(lua, T0, "run", "q")
    pop(lua, T0 + 1, "q", "w1")
    before = keyspace()
    expect_error(lua, r'Complete\.pop\(\): Arg "count" missing or not a number: many',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "many", "q")
    expect_error(lua, r'Complete\.pop\(\): Arg "queue" missing',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", 1)
    expect_error(lua, r'Complete\.pop\(\): Arg "queue" missing or empty',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", 1, "q", "")
    expect_error(lua, r'Complete\.pop\(\): Arg "count" missing or not a number: q',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "lean", "q")
    expect_error(lua, r'Complete\.pop\(\): Arg "queue" missing',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "lean", 1)
    expect_error(lua, r'Complete\.pop\(\): Arg "ahead" missing or not a number: x',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "ahead", "x", 0, 1, "q")
    expect_error(lua, r'Complete\.pop\(\): Arg "keep" missing or not a number: x',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "lean", "ahead", 1, "x", 1,
                 "q")
    expect_error(lua, r'Complete\.pop\(\): Arg "queue" missing',
                 "complete.pop", T0 + 2, "run", "w1", "q", "{}", "ahead", 1, 0, 1)
    assert keyspace() == before
    assert get(lua, "run")["state"] == "running"


def test_a_pop_that_fails_after_the_completion_wrote_comes_back_beside_it(lua):
    put(lua, T0, "done", "q")
    pop(lua, T0 + 1, "q", "w1")
    put(lua, T0 + 1, "corrupt", "q")
    lua.client.hset("ql:j:corrupt", "tags", "{not JSON")  # a pop of it raises
    state, popped = lua("complete.pop", T0 + 2, "done", "w1", "q", "{}", 1, "q")
    # The completion stands and says so; the pop's error is the reply's second element.
    assert state == "complete" and get(lua, "done")["state"] == "complete"
    assert isinstance(popped, redis.ResponseError)
    assert str(popped).startswith("Complete.pop(): the pop failed: Expected object key")
