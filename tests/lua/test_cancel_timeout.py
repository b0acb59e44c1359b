"""cancel and timeout (protocol §1.3, §3.7)."""

from __future__ import annotations

import pytest

from tests.lua.helpers import DAY, T0, expect_error, history, jids, pop, put


def test_cancel_replies_the_jids_given_as_an_array(lua):
    put(lua, T0, "a")
    put(lua, T0, "b")
    assert lua("cancel", T0, "a", "b") == ["a", "b"]


def test_cancel_removes_every_trace_of_a_running_job(lua, redis_client):
    put(lua, T0, "j1", tags=["t"])
    pop(lua, T0, "q", "w1")
    lua("cancel", T0 + 1, "j1")
    assert not redis_client.exists("ql:j:j1")
    assert not redis_client.exists("ql:j:j1-history")
    for suffix in ("work", "locks", "scheduled", "depends"):
        assert redis_client.zscore(f"ql:q:q-{suffix}", "j1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "j1") is None
    assert redis_client.zscore("ql:t:t", "j1") is None
    assert redis_client.zscore("ql:tags", "t") in (None, 0)
    assert lua("get", T0, "j1") is None


def test_cancel_of_scheduled_job(lua, redis_client):
    put(lua, T0, "j1", delay=50)
    lua("cancel", T0, "j1")
    assert redis_client.zcard("ql:q:q-scheduled") == 0


def test_cancel_of_failed_job_clears_failure_and_stat(lua, redis_client):
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    lua("fail", T0, "j1", "w1", "g", "m")
    lua("cancel", T0 + 86400, "j1")
    assert not redis_client.exists("ql:f:g")
    assert not redis_client.sismember("ql:failures", "g")
    assert int(redis_client.hget(f"ql:s:stats:{DAY}:q", "failed")) == 0


def test_cancel_leaves_complete_job_untouched(lua, redis_client):
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    lua("complete", T0, "j1", "w1", "q", "{}")
    before = redis_client.hgetall("ql:j:j1")
    assert lua("cancel", T0, "j1") == ["j1"]
    assert redis_client.hgetall("ql:j:j1") == before
    assert redis_client.zscore("ql:completed", "j1") == T0


def test_cancel_of_tracked_job_keeps_tracked_entry(lua, redis_client):
    put(lua, T0, "j1")
    lua("track", T0, "track", "j1")
    lua("cancel", T0, "j1")
    assert redis_client.zscore("ql:tracked", "j1") == T0
    assert lua.json("track", T0) == {"jobs": {}, "expired": ["j1"]}


def test_cancel_of_unknown_jid_is_accepted(lua):
    assert lua("cancel", T0, "nope") == ["nope"]


def test_cancel_refuses_a_job_with_a_live_dependent(lua, redis_client):
    put(lua, T0, "parent")
    put(lua, T0, "child", depends=["parent"])
    expect_error(
        lua, r"Cancel\(\): parent is a dependency of child but is not mentioned to be canceled",
        "cancel", T0, "parent",
    )
    assert redis_client.exists("ql:j:parent")


def test_cancel_of_job_and_dependent_together(lua, redis_client):
    put(lua, T0, "parent")
    put(lua, T0, "child", depends=["parent"])
    assert lua("cancel", T0, "parent", "child") == ["parent", "child"]
    assert not redis_client.exists("ql:j:parent")
    assert not redis_client.exists("ql:j:child")
    assert redis_client.zcard("ql:q:q-depends") == 0


def test_cancel_of_dependent_detaches_it_from_its_dependency(lua, redis_client):
    put(lua, T0, "parent")
    put(lua, T0, "child", depends=["parent"])
    lua("cancel", T0, "child")
    assert not redis_client.sismember("ql:j:parent-dependents", "child")
    assert not redis_client.exists("ql:j:child-dependencies")
    assert lua("cancel", T0, "parent") == ["parent"]


def test_timeout_stalls_a_running_job(lua, redis_client):
    put(lua, T0, "j1", retries=3)
    pop(lua, T0, "q", "w1")
    assert lua("timeout", T0 + 5, "j1") is None
    fields = redis_client.hgetall("ql:j:j1")
    assert fields["state"] == "stalled"
    assert float(fields["expires"]) == 0
    assert fields["worker"] == "w1"
    assert fields["remaining"] == "3"
    assert redis_client.zscore("ql:q:q-locks", "j1") is None
    assert redis_client.zscore("ql:q:q-work", "j1") == float("inf")
    assert history(redis_client, "j1")[-1][:2] == [T0 + 5, "timed-out"]
    assert jids(pop(lua, T0 + 6, "q", "w2")) == ["j1"]


def test_timeout_unknown_job(lua):
    expect_error(lua, r"Timeout\(\): Job nope does not exist", "timeout", T0, "nope")


@pytest.mark.parametrize("delay", [0, 30])
def test_timeout_of_job_not_running(lua, delay):
    put(lua, T0, "j1", delay=delay)
    expect_error(lua, r"Timeout\(\): Job j1 not running.*", "timeout", T0, "j1")
