"""put / requeue / pop through the raw script: replies, fields, sets (protocol §2, §3.1, §3.3)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import (
    JOB_HASH_FIELDS,
    T0,
    expect_error,
    fmt_time,
    get,
    history,
    jids,
    pop,
    put,
)


def test_put_replies_the_jid_as_a_string(lua):
    assert put(lua, T0, "j1") == "j1"


def test_put_writes_the_job_hash(lua, redis_client):
    put(lua, T0 + 0.25, "j1", "q", klass="my.Klass", data='{"a":  1}')
    fields = redis_client.hgetall("ql:j:j1")
    assert set(fields) <= JOB_HASH_FIELDS
    assert fields["jid"] == "j1"
    assert fields["klass"] == "my.Klass"
    assert fields["data"] == '{"a":  1}'  # stored verbatim as sent
    assert float(fields["priority"]) == 0
    assert fields["tags"] == "{}"
    assert fields["state"] == "waiting"
    assert fields["worker"] == ""
    assert float(fields["expires"]) == 0
    assert fields["queue"] == "q"
    assert fields["retries"] == "5"
    assert fields["remaining"] == "5"
    assert fields["time"] == fmt_time(T0 + 0.25)


def test_put_places_job_in_work_set_scored_by_priority_and_time(lua, redis_client):
    put(lua, T0, "j1", priority=3)
    assert redis_client.zscore("ql:q:q-work", "j1") == pytest.approx(3 - T0 / 1e10, abs=1e-12)
    assert redis_client.zcard("ql:q:q-scheduled") == 0


def test_put_registers_queue_with_first_seen_time(lua, redis_client):
    put(lua, T0, "j1", "q")
    put(lua, T0 + 50, "j2", "q")
    assert redis_client.zscore("ql:queues", "q") == T0


def test_put_records_put_history_with_integer_time(lua, redis_client):
    put(lua, T0 + 0.9, "j1", "q")
    assert history(redis_client, "j1") == [[T0, "put", {"q": "q"}]]


def test_put_with_delay_schedules_the_job(lua, redis_client):
    put(lua, T0, "j1", delay=30)
    assert redis_client.hget("ql:j:j1", "state") == "scheduled"
    assert redis_client.zscore("ql:q:q-scheduled", "j1") == T0 + 30
    assert redis_client.zscore("ql:q:q-work", "j1") is None


def test_put_priority_float_is_stored_as_sent(lua, redis_client):
    put(lua, T0, "j1", priority=7.5)
    assert redis_client.hget("ql:j:j1", "priority") == "7.5"
    assert get(lua, "j1")["priority"] == 7.5


def test_put_tags_are_stored_and_indexed(lua, redis_client):
    put(lua, T0, "j1", tags=["a", "b"])
    assert json.loads(redis_client.hget("ql:j:j1", "tags")) == ["a", "b"]
    assert redis_client.zscore("ql:t:a", "j1") == T0
    assert redis_client.zscore("ql:tags", "b") == 1


def test_put_retries_sets_retries_and_remaining(lua, redis_client):
    put(lua, T0, "j1", retries=2)
    assert redis_client.hmget("ql:j:j1", "retries", "remaining") == ["2", "2"]


def test_reput_defaults_come_from_the_existing_job(lua, redis_client):
    put(lua, T0, "j1", priority=4, tags=["t"], retries=2)
    put(lua, T0 + 1, "j1", "other")
    fields = redis_client.hgetall("ql:j:j1")
    assert float(fields["priority"]) == 4
    assert json.loads(fields["tags"]) == ["t"]
    assert fields["retries"] == "2"
    assert fields["queue"] == "other"


def test_reput_moves_job_out_of_every_old_queue_set(lua, redis_client):
    put(lua, T0, "j1", "a")
    pop(lua, T0, "a", "w1")
    put(lua, T0 + 1, "j1", "b", worker="w1")
    for suffix in ("work", "locks", "scheduled", "depends"):
        assert redis_client.zscore(f"ql:q:a-{suffix}", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert redis_client.zscore("ql:q:b-work", "j1") is not None
    assert redis_client.hmget("ql:j:j1", "state", "worker") == ["waiting", ""]


def test_reput_replaces_old_tags(lua, redis_client):
    put(lua, T0, "j1", tags=["old"])
    put(lua, T0 + 1, "j1", tags=["new"])
    assert redis_client.zscore("ql:t:old", "j1") is None
    assert redis_client.zscore("ql:tags", "old") in (None, 0)
    assert redis_client.zscore("ql:t:new", "j1") == T0 + 1


def test_reput_of_complete_job_leaves_completed_set(lua, redis_client):
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    assert lua("complete", T0 + 1, "j1", "w1", "q", "{}") == "complete"
    put(lua, T0 + 2, "j1")
    assert redis_client.zscore("ql:completed", "j1") is None
    assert redis_client.hget("ql:j:j1", "state") == "waiting"


def test_requeue_behaves_like_put_for_an_existing_job(lua, redis_client):
    put(lua, T0, "j1", "a")
    assert put(lua, T0 + 1, "j1", "b", command="requeue") == "j1"
    assert redis_client.hget("ql:j:j1", "queue") == "b"
    assert redis_client.zscore("ql:q:b-work", "j1") is not None


def test_requeue_of_unknown_job_is_refused(lua):
    expect_error(
        lua, r"Requeue\(\): Job nope does not exist", "requeue", T0,
        "client", "q", "nope", "K", "{}", 0,
    )


def test_pop_of_nothing_replies_empty_json_object(lua):
    assert lua("pop", T0, "q", "w1", 5) == "{}"


def test_pop_replies_json_array_of_job_objects(lua):
    put(lua, T0, "j1")
    reply = lua("pop", T0 + 2, "q", "w1", 1)
    assert isinstance(reply, str)
    jobs = json.loads(reply)
    assert isinstance(jobs, list)
    assert jobs[0]["jid"] == "j1"
    assert jobs[0]["state"] == "running"
    assert jobs[0]["worker"] == "w1"
    assert jobs[0]["expires"] == T0 + 2 + 60


def test_pop_writes_lock_worker_and_history(lua, redis_client):
    put(lua, T0, "j1")
    pop(lua, T0 + 2.5, "q", "w1")
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "running"
    assert fields["worker"] == "w1"
    assert float(fields["expires"]) == T0 + 62.5
    assert fields["time"] == fmt_time(T0 + 2.5)
    assert redis_client.zscore("ql:q:q-locks", "j1") == T0 + 62.5
    assert redis_client.zscore("ql:q:q-work", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") == T0 + 62.5
    assert redis_client.zscore("ql:workers", "w1") == T0 + 2.5
    assert history(redis_client, "j1")[-1] == [T0 + 2, "popped", {"worker": "w1"}]


def test_pop_count_limits_the_batch(lua):
    for index in range(4):
        put(lua, T0 + index, f"j{index}")
    assert jids(pop(lua, T0 + 10, "q", "w1", 3)) == ["j0", "j1", "j2"]
    assert jids(pop(lua, T0 + 10, "q", "w1", 3)) == ["j3"]


def test_pop_uses_queue_heartbeat_then_global_heartbeat(lua):
    put(lua, T0, "a", "q1")
    put(lua, T0, "b", "q2")
    lua("config.set", T0, "heartbeat", 120)
    lua("config.set", T0, "q1-heartbeat", 30)
    assert pop(lua, T0, "q1")[0]["expires"] == T0 + 30
    assert pop(lua, T0, "q2")[0]["expires"] == T0 + 120


def test_pop_releases_scheduled_jobs_when_due(lua, redis_client):
    put(lua, T0, "j1", delay=10)
    assert pop(lua, T0 + 9.9) == []
    assert jids(pop(lua, T0 + 10)) == ["j1"]
    assert redis_client.zscore("ql:q:q-scheduled", "j1") is None


def test_paused_queue_pops_nothing_and_registers_no_worker(lua, redis_client):
    put(lua, T0, "j1")
    assert lua("pause", T0, "q") is None
    assert redis_client.sismember("ql:paused_queues", "q")
    assert pop(lua, T0, "q", "w1") == []
    assert redis_client.zscore("ql:workers", "w1") is None
    assert lua("unpause", T0, "q") is None
    assert jids(pop(lua, T0, "q", "w1")) == ["j1"]


def test_max_concurrency_caps_running_jobs(lua):
    for index in range(3):
        put(lua, T0, f"j{index}")
    lua("config.set", T0, "q-max-concurrency", 2)
    assert len(pop(lua, T0, "q", "w1", 5)) == 2
    assert pop(lua, T0 + 1, "q", "w2", 5) == []


def test_length_counts_locks_waiting_and_scheduled(lua):
    put(lua, T0, "a")
    put(lua, T0, "b")
    put(lua, T0, "c", delay=100)
    put(lua, T0, "d", "other")
    pop(lua, T0, "q", "w1")
    assert lua("length", T0, "q") == 3


PUT_ARGS = ["client", "q", "j1", "K", "{}", 0]
NOT_JSON = r"|.*Expected .* but found .*"  # cjson's own decode error is accepted too
DATA_NOT_JSON = r'Put\(\): Arg "data" missing or not JSON.*'


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["client", "q"], r'Put\(\): Arg "jid" missing'),
        (["client", "q", "j1"], r'Put\(\): Arg "klass" missing'),
        (["client", "q", "j1", "K"], DATA_NOT_JSON),
        (["client", "q", "j1", "K", "{bad", 0], DATA_NOT_JSON + NOT_JSON),
        (["client", "q", "j1", "K", "{}", "soon"], r'Put\(\): Arg "delay" not a number.*'),
        ([*PUT_ARGS, "priority"], r"(Put\(\): )?Odd number of additional args.*"),
        ([*PUT_ARGS, "retries", "many"], r'Put\(\): Arg "retries" not a number.*'),
        ([*PUT_ARGS, "priority", "high"], r'Put\(\): Arg "priority" not a number.*'),
        ([*PUT_ARGS, "tags", "{bad"], r'Put\(\): Arg "tags" not JSON.*' + NOT_JSON),
        ([*PUT_ARGS, "depends", "[bad"], r'Put\(\): Arg "depends" not JSON.*' + NOT_JSON),
    ],
)
def test_put_validation_messages(lua, args, pattern):
    expect_error(lua, pattern, "put", T0, *args)


@pytest.mark.parametrize(
    ("command", "args", "pattern"),
    [
        ("pop", ["q"], r'Pop\(\): Arg "worker" missing'),
        ("pop", ["q", "w1"], r'Pop\(\): Arg "count" missing or not a number.*'),
        ("pop", ["q", "w1", "many"], r'Pop\(\): Arg "count" missing or not a number.*'),
        ("peek", ["q"], r'Peek\(\): Arg "count" missing or not a number.*'),
        ("peek", ["q", "some"], r'Peek\(\): Arg "count" missing or not a number.*'),
    ],
)
def test_pop_and_peek_validation_messages(lua, command, args, pattern):
    expect_error(lua, pattern, command, T0, *args)
