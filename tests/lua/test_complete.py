"""complete, advancing with next, and completed-job expiry (protocol §1.3, §3.6, §3.10)."""

from __future__ import annotations

import pytest

from tests.lua.helpers import T0, expect_error, fmt_time, get, pop, put, whats


@pytest.fixture
def running(lua):
    """One job `j1` in queue q, popped by w1 at T0."""
    put(lua, T0, "j1", "q", retries=3, tags=["t"])
    pop(lua, T0, "q", "w1")
    return "j1"


def test_complete_replies_complete_and_finishes_the_job(lua, redis_client, running):
    assert lua("complete", T0 + 5, "j1", "w1", "q", '{"done": true}') == "complete"
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "complete"
    assert fields["worker"] == ""
    assert fields["queue"] == ""
    assert float(fields["expires"]) == 0
    assert fields["failure"] == "{}"
    assert fields["remaining"] == "3"
    assert fields["data"] == '{"done": true}'
    assert fields["time"] == fmt_time(T0 + 5)
    assert redis_client.zscore("ql:completed", "j1") == T0 + 5
    assert redis_client.zscore("ql:q:q-locks", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert whats(redis_client, "j1") == ["put", "popped", "done"]


def test_complete_job_object_has_empty_queue(lua, running):
    lua("complete", T0 + 5, "j1", "w1", "q", "{}")
    job = get(lua, "j1")
    assert job["state"] == "complete"
    assert job["queue"] == ""
    assert job["worker"] == ""
    assert job["expires"] == 0


def test_complete_with_next_advances_to_waiting(lua, redis_client, running):
    assert lua("complete", T0 + 5, "j1", "w1", "q", "{}", "next", "q2") == "waiting"
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "waiting"
    assert fields["queue"] == "q2"
    assert fields["worker"] == ""
    assert fields["failure"] == "{}"
    assert float(fields["expires"]) == 0
    assert redis_client.zscore("ql:q:q2-work", "j1") is not None
    assert redis_client.zscore("ql:queues", "q2") == T0 + 5
    assert redis_client.zscore("ql:completed", "j1") is None
    assert get(lua, "j1")["history"][-1] == {"when": T0 + 5, "what": "put", "q": "q2"}


def test_complete_with_next_and_delay_is_scheduled_but_state_stays_waiting(
    lua, redis_client, running
):
    reply = lua("complete", T0 + 5, "j1", "w1", "q", "{}", "next", "q2", "delay", 30)
    assert reply == "scheduled"
    assert redis_client.zscore("ql:q:q2-scheduled", "j1") == T0 + 35
    assert redis_client.hget("ql:j:j1", "state") == "waiting"


def test_complete_with_next_and_live_dependency_waits(lua, redis_client, running):
    put(lua, T0, "dep", "other")
    reply = lua("complete", T0 + 5, "j1", "w1", "q", "{}", "next", "q2", "depends", '["dep"]')
    assert reply == "depends"
    assert redis_client.hget("ql:j:j1", "state") == "depends"
    assert redis_client.zscore("ql:q:q2-depends", "j1") == T0 + 5
    assert redis_client.smembers("ql:j:j1-dependencies") == {"dep"}
    assert redis_client.smembers("ql:j:dep-dependents") == {"j1"}


def test_complete_with_next_depends_and_delay_keeps_scheduled_field(lua, redis_client, running):
    put(lua, T0, "dep", "other")
    reply = lua(
        "complete", T0 + 5, "j1", "w1", "q", "{}",
        "next", "q2", "delay", 20, "depends", '["dep"]',
    )
    assert reply == "depends"
    assert float(redis_client.hget("ql:j:j1", "scheduled")) == T0 + 25


def test_complete_with_next_ignores_dependency_on_complete_job(lua, running):
    put(lua, T0, "done")
    pop(lua, T0, "q", "w2")
    lua("complete", T0 + 1, "done", "w2", "q", "{}")
    reply = lua("complete", T0 + 5, "j1", "w1", "q", "{}", "next", "q2", "depends", '["done"]')
    assert reply == "waiting"


def test_complete_records_run_stat(lua, redis_client, running):
    lua("complete", T0 + 7.5, "j1", "w1", "q", "{}")
    day = T0 - T0 % 86400
    stats = redis_client.hgetall(f"ql:s:run:{day}:q")
    assert int(stats["total"]) == 1
    assert float(stats["mean"]) == pytest.approx(7.5)
    assert int(stats["s7"]) == 1


def test_complete_unknown_job(lua):
    expect_error(
        lua, r"Complete\(\): Job nope does not exist", "complete", T0, "nope", "w1", "q", "{}"
    )


def test_complete_job_not_running(lua):
    put(lua, T0, "j1")
    expect_error(
        lua, r"Complete\(\): Job j1 is not currently running: waiting",
        "complete", T0, "j1", "w1", "q", "{}",
    )


def test_complete_by_another_worker(lua, running):
    expect_error(
        lua, r"Complete\(\): Job j1 has been handed out to another worker: w1",
        "complete", T0, "j1", "w2", "q", "{}",
    )


def test_complete_in_another_queue(lua, running):
    expect_error(
        lua, r"Complete\(\): Job j1 running in another queue: q",
        "complete", T0, "j1", "w1", "other", "{}",
    )


@pytest.mark.parametrize("option", ["delay", "depends"])
def test_complete_option_without_next(lua, running, option):
    value = 5 if option == "delay" else '["x"]'
    expect_error(
        lua, rf'Complete\(\): "{option}" cannot be used without a "next"\.',
        "complete", T0, "j1", "w1", "q", "{}", option, value,
    )


@pytest.mark.parametrize(
    ("args", "name"),
    [(["j1"], "worker"), (["j1", "w1"], "queue")],
)
def test_complete_missing_argument(lua, running, args, name):
    expect_error(lua, rf'Complete\(\): Arg "{name}" missing', "complete", T0, *args)


@pytest.mark.parametrize("data", [None, "{bad"])
def test_complete_data_missing_or_not_json(lua, running, data):
    args = ["j1", "w1", "q"] + ([] if data is None else [data])
    expect_error(
        lua, r'Complete\(\): Arg "data" missing or not JSON.*|.*Expected .* but found .*',
        "complete", T0, *args,
    )


def _complete_one(lua, jid, now):
    put(lua, now, jid, tags=["keep"])
    pop(lua, now, "q", "w1")
    return lua("complete", now, jid, "w1", "q", "{}")


def test_completed_jobs_expire_after_jobs_history_seconds(lua, redis_client):
    lua("config.set", T0, "jobs-history", 100)
    _complete_one(lua, "old", T0)
    _complete_one(lua, "new", T0 + 101)
    assert not redis_client.exists("ql:j:old")
    assert not redis_client.exists("ql:j:old-history")
    assert redis_client.zscore("ql:completed", "old") is None
    assert redis_client.zscore("ql:t:keep", "old") is None
    assert redis_client.zscore("ql:tags", "keep") == 1
    assert redis_client.exists("ql:j:new")


def test_completed_jobs_beyond_jobs_history_count_expire(lua, redis_client):
    lua("config.set", T0, "jobs-history-count", 2)
    for index in range(3):
        _complete_one(lua, f"c{index}", T0 + index)
    assert redis_client.zrange("ql:completed", 0, -1) == ["c1", "c2"]
    assert not redis_client.exists("ql:j:c0")
    assert redis_client.exists("ql:j:c1")


def test_expiry_keeps_the_tracked_entry(lua, redis_client):
    lua("config.set", T0, "jobs-history-count", 1)
    put(lua, T0, "old")
    lua("track", T0, "track", "old")
    pop(lua, T0, "q", "w1")
    lua("complete", T0, "old", "w1", "q", "{}")
    _complete_one(lua, "newer", T0 + 1)
    assert not redis_client.exists("ql:j:old")
    assert redis_client.zscore("ql:tracked", "old") == T0


@pytest.mark.parametrize(("extra", "state"), [((), "complete"), (("next", "q2"), "waiting")])
def test_complete_and_advance_reset_remaining(lua, redis_client, extra, state):
    put(lua, T0, "j1", retries=3)
    pop(lua, T0, "q", "w1")
    lua("retry", T0, "j1", "q", "w1")
    pop(lua, T0, "q", "w1")
    assert redis_client.hget("ql:j:j1", "remaining") == "2"
    lua("complete", T0 + 1, "j1", "w1", "q", "{}", *extra)
    assert redis_client.hmget("ql:j:j1", "state", "remaining") == [state, "3"]


def test_data_sent_back_unchanged_leaves_the_same_job_as_new_data(lua, redis_client):
    # The worker sends a job's data back as it was; the script then neither decodes nor
    # rewrites it. The job must end exactly as one completed with (equal) new data.
    big = '{"blob": "' + "x" * 10_000 + '"}'
    for jid in ("same", "other"):
        put(lua, T0, jid, "q", data=big if jid == "same" else '{"a": 1}')
    pop(lua, T0, "q", "w1", count=2)
    assert lua("complete", T0 + 5, "same", "w1", "q", big) == "complete"
    assert lua("complete", T0 + 5, "other", "w1", "q", big) == "complete"
    same, other = redis_client.hgetall("ql:j:same"), redis_client.hgetall("ql:j:other")
    assert same["data"] == other["data"] == big
    assert {k: v for k, v in same.items() if k != "jid"} == {
        k: v for k, v in other.items() if k != "jid"}


def test_changed_data_is_still_checked_before_anything_is_written(lua, keyspace, running):
    before = keyspace()
    expect_error(lua, r'Complete\(\): Arg "data" missing or not JSON.*|.*Expected .* but found .*',
                 "complete", T0 + 5, "j1", "w1", "q", "{nope")
    assert keyspace() == before
