"""heartbeat, lock expiry, grace period and retries exhaustion (protocol §3.4, §3.5)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import DAY, T0, expect_error, history, jids, pop, put, whats

EXPIRY = T0 + 60
GRACE_END = EXPIRY + 1 + 10  # the first expiry notice happens at EXPIRY + 1


@pytest.fixture
def running(lua):
    """One job `j1` in queue q (retries 1), popped by w1 at T0, lock expiring at T0+60."""
    put(lua, T0, "j1", "q", retries=1)
    pop(lua, T0, "q", "w1")
    return "j1"


def test_heartbeat_replies_truncated_expiry_and_stores_float(lua, redis_client, running):
    reply = lua("heartbeat", T0 + 4.7, "j1", "w1")
    assert reply == int(T0 + 64.7)
    assert isinstance(reply, int)
    assert float(redis_client.hget("ql:j:j1", "expires")) == pytest.approx(T0 + 64.7)
    assert redis_client.zscore("ql:q:q-locks", "j1") == pytest.approx(T0 + 64.7)
    assert redis_client.zscore("ql:w:w1:jobs", "j1") == pytest.approx(T0 + 64.7)
    assert redis_client.zscore("ql:workers", "w1") == pytest.approx(T0 + 4.7)


def test_heartbeat_uses_queue_heartbeat(lua, running):
    lua("config.set", T0, "q-heartbeat", 15)
    assert lua("heartbeat", T0 + 1, "j1", "w1") == T0 + 16


def test_heartbeat_with_data_replaces_data(lua, redis_client, running):
    lua("heartbeat", T0 + 1, "j1", "w1", '{"progress": 50}')
    assert json.loads(redis_client.hget("ql:j:j1", "data")) == {"progress": 50}


def test_heartbeat_after_lock_expired_but_not_reassigned(lua, running):
    assert lua("heartbeat", T0 + 100, "j1", "w1") == T0 + 160


def test_heartbeat_unknown_job(lua):
    expect_error(lua, r"Heartbeat\(\): Job nope does not exist", "heartbeat", T0, "nope", "w1")


def test_heartbeat_job_not_running(lua):
    put(lua, T0, "j1")
    expect_error(
        lua, r"Heartbeat\(\): Job j1 not currently running: waiting", "heartbeat", T0, "j1", "w1"
    )


def test_heartbeat_by_another_worker(lua, running):
    expect_error(
        lua, r"Heartbeat\(\): Job j1 given out to another worker: w1",
        "heartbeat", T0, "j1", "w2",
    )


def test_heartbeat_missing_worker(lua, running):
    expect_error(lua, r'Heatbeat\(\): Arg "worker" missing', "heartbeat", T0, "j1")


def test_first_expiry_gives_a_grace_notice(lua, redis_client, running):
    assert pop(lua, EXPIRY + 1, "q", "w2") == []
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "running"
    assert fields["worker"] == "w1"
    assert fields["grace"] == "1"
    assert fields["remaining"] == "1"
    assert redis_client.zscore("ql:q:q-locks", "j1") == GRACE_END
    assert history(redis_client, "j1")[-1][:2] == [EXPIRY + 1, "timed-out"]
    assert int(redis_client.hget(f"ql:s:stats:{DAY}:q", "retries")) == 1


def test_second_expiry_hands_the_job_to_the_new_worker(lua, redis_client, running):
    pop(lua, EXPIRY + 1, "q", "w2")
    assert pop(lua, GRACE_END - 1, "q", "w2") == []
    jobs = pop(lua, GRACE_END, "q", "w2")
    assert jids(jobs) == ["j1"]
    assert jobs[0]["worker"] == "w2"
    assert jobs[0]["remaining"] == 0
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["worker"] == "w2"
    assert "grace" not in fields or fields["grace"] in ("", "0")
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert redis_client.zscore("ql:w:w2:jobs", "j1") == GRACE_END + 60
    assert whats(redis_client, "j1") == ["put", "popped", "timed-out", "popped"]
    assert history(redis_client, "j1")[-1] == [GRACE_END, "popped", {"worker": "w2"}]


def test_exhausted_retries_fail_the_job(lua, redis_client):
    put(lua, T0, "j1", retries=0)
    pop(lua, T0, "q", "w1")
    pop(lua, EXPIRY + 1, "q", "w2")
    assert pop(lua, GRACE_END, "q", "w2") == []
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "failed"
    assert fields["worker"] == ""
    assert fields["expires"] == ""
    assert fields["remaining"] == "-1"
    assert json.loads(fields["failure"]) == {
        "group": "failed-retries-q",
        "message": 'Job exhausted retries in queue "q"',
        "when": GRACE_END,
        "worker": "",
    }
    assert redis_client.sismember("ql:failures", "failed-retries-q")
    assert redis_client.lrange("ql:f:failed-retries-q", 0, -1) == ["j1"]
    for suffix in ("work", "locks", "scheduled"):
        assert redis_client.zscore(f"ql:q:q-{suffix}", "j1") is None
    assert history(redis_client, "j1")[-1] == [GRACE_END, "failed", {"group": "failed-retries-q"}]
    stats = redis_client.hgetall(f"ql:s:stats:{DAY}:q")
    assert (int(stats["failures"]), int(stats["failed"])) == (1, 1)


def test_retries_allow_one_stall_per_remaining_plus_one(lua, redis_client, running):
    for expected in (["j1"], []):
        notice = float(redis_client.zscore("ql:q:q-locks", "j1")) + 1
        assert pop(lua, notice, "q", "w2") == []
        grace_end = float(redis_client.zscore("ql:q:q-locks", "j1"))
        assert jids(pop(lua, grace_end, "q", "w2")) == expected
    assert redis_client.hget("ql:j:j1", "state") == "failed"


def test_zero_grace_period_does_both_steps_at_once(lua, redis_client, running):
    lua("config.set", T0, "grace-period", 0)
    jobs = pop(lua, EXPIRY + 1, "q", "w2")
    assert jids(jobs) == ["j1"]
    assert jobs[0]["worker"] == "w2"
    assert redis_client.hget("ql:j:j1", "remaining") == "0"


def test_stalled_jobs_are_listed_and_counted(lua, running):
    put(lua, T0, "j2")
    pop(lua, T0 + 30, "q", "w1")
    assert lua("jobs", EXPIRY + 1, "stalled", "q") == ["j1"]
    assert lua("jobs", EXPIRY + 1, "running", "q") == ["j2"]
    counts = lua.json("queues", EXPIRY + 1, "q")
    assert (counts["running"], counts["stalled"]) == (1, 1)


def test_pop_hands_out_expired_locks_before_waiting_work(lua, running):
    assert pop(lua, EXPIRY + 1, "q", "w2") == []
    put(lua, EXPIRY + 2, "urgent", priority=100)
    assert jids(pop(lua, GRACE_END, "q", "w2", 2)) == ["j1", "urgent"]


def test_heartbeat_and_fail_store_data_re_encoded_by_cjson(lua, redis_client, running):
    sent = '{"progress":   50,  "note": "x/y"}'
    expected = redis_client.eval("return cjson.encode(cjson.decode(ARGV[1]))", 0, sent)
    lua("heartbeat", T0 + 1, "j1", "w1", sent)
    assert redis_client.hget("ql:j:j1", "data") == expected
    lua("fail", T0 + 2, "j1", "w1", "g", "m", sent)
    assert redis_client.hget("ql:j:j1", "data") == expected
