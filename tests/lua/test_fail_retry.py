"""fail, retry, unfail and the failed listing (protocol §1.3, §3.5, §3.7)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import DAY, T0, expect_error, get, history, jids, pop, put, whats

EXHAUSTED = 'Job exhausted retries in queue "q"'


@pytest.fixture
def running(lua):
    """One job `j1` in queue q (retries 2), popped by w1 at T0."""
    put(lua, T0, "j1", "q", retries=2)
    pop(lua, T0, "q", "w1")
    return "j1"


def stats(redis_client, queue="q", day=DAY):
    """The failures/failed/retries counters of a queue and day, as ints."""
    raw = redis_client.hgetall(f"ql:s:stats:{day}:{queue}")
    return {name: int(raw.get(name, 0)) for name in ("failures", "failed", "retries")}


def test_fail_replies_jid_and_writes_failure(lua, redis_client, running):
    assert lua("fail", T0 + 3.7, "j1", "w1", "boom", "it broke") == "j1"
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "failed"
    assert fields["worker"] == ""
    assert fields["expires"] == ""
    assert fields["queue"] == "q"
    assert json.loads(fields["failure"]) == {
        "group": "boom", "message": "it broke", "when": T0 + 3, "worker": "w1",
    }
    assert redis_client.sismember("ql:failures", "boom")
    assert redis_client.lrange("ql:f:boom", 0, -1) == ["j1"]
    assert redis_client.zscore("ql:q:q-locks", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert history(redis_client, "j1")[-1] == [T0 + 3, "failed", {"worker": "w1", "group": "boom"}]
    assert stats(redis_client) == {"failures": 1, "failed": 1, "retries": 0}


def test_fail_with_data_replaces_data(lua, redis_client, running):
    lua("fail", T0, "j1", "w1", "boom", "msg", '{"b":2}')
    assert json.loads(redis_client.hget("ql:j:j1", "data")) == {"b": 2}


def test_failed_job_object(lua, running):
    lua("fail", T0, "j1", "w1", "boom", "msg")
    job = get(lua, "j1")
    assert job["state"] == "failed"
    assert job["expires"] == 0  # the hash holds "", the object a number
    assert job["worker"] == ""
    assert job["failure"] == {"group": "boom", "message": "msg", "when": T0, "worker": "w1"}


def test_failed_groups_are_newest_first(lua, redis_client):
    for index in range(3):
        put(lua, T0, f"j{index}")
    pop(lua, T0, "q", "w1", 3)
    for index in range(3):
        lua("fail", T0 + index, f"j{index}", "w1", "g", "m")
    assert lua.json("failed", T0) == {"g": 3}
    assert lua.json("failed", T0, "g") == {"total": 3, "jobs": ["j2", "j1", "j0"]}
    assert lua.json("failed", T0, "g", 1, 1) == {"total": 3, "jobs": ["j1"]}


def test_failed_with_nothing_failed(lua):
    assert lua("failed", T0) == "{}"
    assert lua.json("failed", T0, "nope") == {"total": 0, "jobs": {}}


@pytest.mark.parametrize(("args", "name"), [(["g", "x"], "start"), (["g", 0, "y"], "limit")])
def test_failed_paging_not_a_number(lua, args, name):
    expect_error(lua, rf'Failed\(\): Arg "{name}" is not a number.*', "failed", T0, *args)


def test_fail_unknown_job(lua):
    expect_error(lua, r"Fail\(\): Job nopedoes not exist", "fail", T0, "nope", "w1", "g", "m")


def test_fail_job_not_running(lua):
    put(lua, T0, "j1")
    expect_error(
        lua, r"Fail\(\): Job j1not currently running: waiting", "fail", T0, "j1", "w1", "g", "m"
    )


def test_fail_by_another_worker(lua, running):
    expect_error(
        lua, r"Fail\(\): Job j1 running with another worker: w1",
        "fail", T0, "j1", "w2", "g", "m",
    )


@pytest.mark.parametrize(
    ("args", "name"),
    [(["j1"], "worker"), (["j1", "w1"], "group"), (["j1", "w1", "g"], "message")],
)
def test_fail_missing_argument(lua, running, args, name):
    expect_error(lua, rf'Fail\(\): Arg "{name}" missing', "fail", T0, *args)


def test_retry_replies_remaining_and_requeues(lua, redis_client, running):
    reply = lua("retry", T0 + 1, "j1", "q", "w1")
    assert reply == 1
    assert isinstance(reply, int)
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "waiting"
    assert fields["remaining"] == "1"
    assert "grace" not in fields
    assert redis_client.zscore("ql:q:q-locks", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert redis_client.zscore("ql:q:q-work", "j1") is not None
    assert whats(redis_client, "j1") == ["put", "popped"]


def test_retry_with_delay_schedules(lua, redis_client, running):
    lua("retry", T0 + 1, "j1", "q", "w1", 30)
    assert redis_client.hget("ql:j:j1", "state") == "scheduled"
    assert redis_client.zscore("ql:q:q-scheduled", "j1") == T0 + 31


def test_retry_with_group_keeps_failure_while_waiting(lua, redis_client, running):
    lua("retry", T0 + 1, "j1", "q", "w1", 0, "flaky", "try again")
    failure = json.loads(redis_client.hget("ql:j:j1", "failure"))
    assert failure["group"] == "flaky"
    assert failure["message"] == "try again"
    assert redis_client.hget("ql:j:j1", "state") == "waiting"


def test_retry_exhaustion_fails_the_job(lua, redis_client, running):
    assert lua("retry", T0 + 1, "j1", "q", "w1") == 1
    pop(lua, T0 + 2, "q", "w1")
    assert lua("retry", T0 + 3, "j1", "q", "w1") == 0
    pop(lua, T0 + 4, "q", "w1")
    assert lua("retry", T0 + 5, "j1", "q", "w1") == -1
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "failed"
    assert fields["worker"] == ""
    assert fields["expires"] == ""
    assert json.loads(fields["failure"]) == {
        "group": "failed-retries-q", "message": EXHAUSTED, "when": T0 + 5, "worker": "",
    }
    assert redis_client.lrange("ql:f:failed-retries-q", 0, -1) == ["j1"]
    assert redis_client.zscore("ql:q:q-work", "j1") is None


def test_retry_exhaustion_uses_given_group_and_message(lua, redis_client):
    put(lua, T0, "j1", retries=0)
    pop(lua, T0, "q", "w1")
    assert lua("retry", T0 + 1, "j1", "q", "w1", 0, "mygroup", "my message") == -1
    failure = json.loads(redis_client.hget("ql:j:j1", "failure"))
    assert (failure["group"], failure["message"]) == ("mygroup", "my message")
    assert redis_client.lrange("ql:f:mygroup", 0, -1) == ["j1"]


def test_retry_unknown_job(lua):
    expect_error(lua, r"Retry\(\): Job nope does not exist", "retry", T0, "nope", "q", "w1")


def test_retry_job_not_running(lua):
    put(lua, T0, "j1")
    expect_error(
        lua, r"Retry\(\): Job j1 is not currently running: waiting", "retry", T0, "j1", "q", "w1"
    )


def test_retry_by_another_worker(lua, running):
    expect_error(
        lua, r"Retry\(\): Job j1 has been given to another worker: w1",
        "retry", T0, "j1", "q", "w2",
    )


@pytest.mark.parametrize(("args", "name"), [(["j1"], "queue"), (["j1", "q"], "worker")])
def test_retry_missing_argument(lua, running, args, name):
    expect_error(lua, rf'Retry\(\): Arg "{name}" missing', "retry", T0, *args)


def test_retry_delay_not_a_number(lua, running):
    expect_error(lua, r'Retry\(\): Arg "delay" not a number.*', "retry", T0, "j1", "q", "w1", "x")


def _fail_three(lua):
    for index in range(3):
        put(lua, T0, f"j{index}", retries=4)
    pop(lua, T0, "q", "w1", 3)
    for index in range(3):
        lua("fail", T0 + index, f"j{index}", "w1", "g", "m")


def test_unfail_moves_the_oldest_jobs(lua, redis_client):
    _fail_three(lua)
    assert lua("unfail", T0 + 10, "q2", "g", 2) == 2
    assert redis_client.lrange("ql:f:g", 0, -1) == ["j2"]
    fields = redis_client.hgetall("ql:j:j0")
    assert fields["state"] == "waiting"
    assert fields["queue"] == "q2"
    assert fields["worker"] == ""
    assert float(fields["expires"]) == 0
    assert fields["remaining"] == "4"
    assert json.loads(fields["failure"])["group"] == "g"
    assert history(redis_client, "j0")[-1] == [T0 + 10, "put", {"q": "q2"}]
    assert set(jids(pop(lua, T0 + 11, "q2", "w1", 5))) == {"j0", "j1"}
    assert int(redis_client.hget(f"ql:s:stats:{DAY}:q", "failed")) == 3


def test_unfail_drops_an_emptied_group(lua, redis_client):
    _fail_three(lua)
    assert lua("unfail", T0 + 10, "q", "g") == 3
    assert not redis_client.exists("ql:f:g")
    assert not redis_client.sismember("ql:failures", "g")


def test_unfail_missing_group(lua):
    expect_error(lua, r'Unfail\(\): Arg "group" missing', "unfail", T0, "q")


def test_reput_of_failed_job_clears_failure_list_and_stat(lua, redis_client, running):
    lua("fail", T0, "j1", "w1", "g", "m")
    put(lua, T0 + 86400, "j1")
    assert not redis_client.exists("ql:f:g")
    assert not redis_client.sismember("ql:failures", "g")
    assert stats(redis_client)["failed"] == 0
    assert stats(redis_client, day=DAY + 86400)["failed"] == 0


def test_retry_clears_the_grace_flag(lua, redis_client, running):
    pop(lua, T0 + 61, "q", "w2")
    assert redis_client.hget("ql:j:j1", "grace") == "1"
    assert lua("retry", T0 + 62, "j1", "q", "w1") == 1
    assert not redis_client.hget("ql:j:j1", "grace")
