"""Dependencies: put depends, depends on/off, release on complete (protocol §3.1, §3.6, §3.8)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import T0, expect_error, get, jids, pop, put


def complete(lua, jid, now, queue="q", worker="w1"):
    """Pop `jid` (must be the top of its queue) and complete it."""
    assert jids(pop(lua, now, queue, worker)) == [jid]
    return lua("complete", now, jid, worker, queue, "{}")


def test_put_with_live_dependency_waits(lua, redis_client):
    put(lua, T0, "parent", "other")
    put(lua, T0 + 1, "child", depends=["parent"])
    assert redis_client.hget("ql:j:child", "state") == "depends"
    assert redis_client.zscore("ql:q:q-depends", "child") == T0 + 1
    assert redis_client.zscore("ql:q:q-work", "child") is None
    assert redis_client.smembers("ql:j:child-dependencies") == {"parent"}
    assert redis_client.smembers("ql:j:parent-dependents") == {"child"}
    assert get(lua, "child")["dependencies"] == ["parent"]
    assert get(lua, "parent")["dependents"] == ["child"]


def test_job_object_dependency_lists_are_empty_objects(lua):
    put(lua, T0, "j1")
    raw = lua("get", T0, "j1")
    job = json.loads(raw)
    assert job["dependents"] == {}
    assert job["dependencies"] == {}


@pytest.mark.parametrize("setup", ["unknown", "complete"])
def test_dependency_on_unknown_or_complete_job_is_ignored(lua, redis_client, setup):
    if setup == "complete":
        put(lua, T0, "parent")
        complete(lua, "parent", T0)
    put(lua, T0 + 1, "child", depends=["parent"])
    assert redis_client.hget("ql:j:child", "state") == "waiting"
    assert not redis_client.exists("ql:j:child-dependencies")


def test_completing_the_dependency_releases_the_dependent(lua, redis_client):
    put(lua, T0, "parent")
    put(lua, T0 + 1, "child", depends=["parent"])
    assert complete(lua, "parent", T0 + 5) == "complete"
    assert redis_client.hget("ql:j:child", "state") == "waiting"
    assert redis_client.zscore("ql:q:q-depends", "child") is None
    assert redis_client.zscore("ql:q:q-work", "child") == pytest.approx(-(T0 + 5) / 1e10, abs=1e-12)
    assert not redis_client.exists("ql:j:parent-dependents")
    assert not redis_client.exists("ql:j:child-dependencies")


def test_dependent_waits_for_all_dependencies(lua, redis_client):
    put(lua, T0, "a", "qa")
    put(lua, T0, "b", "qb")
    put(lua, T0 + 1, "child", depends=["a", "b"])
    complete(lua, "a", T0 + 2, "qa")
    assert redis_client.hget("ql:j:child", "state") == "depends"
    complete(lua, "b", T0 + 3, "qb")
    assert redis_client.hget("ql:j:child", "state") == "waiting"


def test_delayed_dependent_goes_to_scheduled_when_released(lua, redis_client):
    put(lua, T0, "parent")
    put(lua, T0 + 1, "child", delay=100, depends=["parent"])
    assert redis_client.hget("ql:j:child", "state") == "depends"
    assert float(redis_client.hget("ql:j:child", "scheduled")) == T0 + 101
    complete(lua, "parent", T0 + 5)
    assert redis_client.hget("ql:j:child", "state") == "scheduled"
    assert redis_client.zscore("ql:q:q-scheduled", "child") == T0 + 101


def test_depends_on_adds_and_off_removes(lua, redis_client):
    put(lua, T0, "a", "other")
    put(lua, T0, "b", "other")
    put(lua, T0, "child", depends=["a"])
    reply = lua("depends", T0, "child", "on", "b")
    assert reply == 1
    assert isinstance(reply, int)
    assert redis_client.smembers("ql:j:child-dependencies") == {"a", "b"}
    assert redis_client.smembers("ql:j:b-dependents") == {"child"}
    assert lua("depends", T0, "child", "off", "a") == 1
    assert redis_client.smembers("ql:j:child-dependencies") == {"b"}
    assert not redis_client.sismember("ql:j:a-dependents", "child")
    assert redis_client.hget("ql:j:child", "state") == "depends"


def test_removing_last_dependency_releases_the_job(lua, redis_client):
    put(lua, T0, "a", "other")
    put(lua, T0, "child", depends=["a"])
    assert lua("depends", T0 + 1, "child", "off", "a") == 1
    assert redis_client.hget("ql:j:child", "state") == "waiting"
    assert redis_client.zscore("ql:q:q-work", "child") is not None
    assert redis_client.zscore("ql:q:q-depends", "child") is None


def test_depends_off_all_releases_the_job(lua, redis_client):
    put(lua, T0, "a", "other")
    put(lua, T0, "b", "other")
    put(lua, T0, "child", depends=["a", "b"])
    assert lua("depends", T0 + 1, "child", "off", "all") == 1
    assert redis_client.hget("ql:j:child", "state") == "waiting"
    assert not redis_client.sismember("ql:j:a-dependents", "child")
    assert not redis_client.sismember("ql:j:b-dependents", "child")


def test_depends_on_job_not_in_depends_state(lua):
    put(lua, T0, "a")
    put(lua, T0, "j1")
    expect_error(
        lua, r"Depends\(\): Job j1 not in the depends state: waiting",
        "depends", T0, "j1", "on", "a",
    )


def test_depends_missing_command(lua):
    put(lua, T0, "a", "other")
    put(lua, T0, "child", depends=["a"])
    expect_error(lua, r'Depends\(\): Arg "command" missing', "depends", T0, "child")


def test_depends_unknown_command(lua):
    put(lua, T0, "a", "other")
    put(lua, T0, "child", depends=["a"])
    expect_error(
        lua, r'Depends\(\): Argument "command" must be "on" or "off"',
        "depends", T0, "child", "sideways", "a",
    )


def test_reput_with_new_depends_drops_old_dependencies(lua, redis_client):
    put(lua, T0, "a", "other")
    put(lua, T0, "b", "other")
    put(lua, T0, "child", depends=["a"])
    put(lua, T0 + 1, "child", depends=["b"])
    assert redis_client.smembers("ql:j:child-dependencies") == {"b"}
    assert not redis_client.sismember("ql:j:a-dependents", "child")


def test_reput_with_empty_depends_keeps_dependencies(lua, redis_client):
    put(lua, T0, "a", "other")
    put(lua, T0, "child", depends=["a"])
    put(lua, T0 + 1, "child")
    assert redis_client.smembers("ql:j:child-dependencies") == {"a"}
    assert redis_client.hget("ql:j:child", "state") == "depends"


def test_depends_jobs_listing(lua):
    put(lua, T0, "a", "other")
    put(lua, T0, "child", depends=["a"])
    assert lua("jobs", T0, "depends", "q") == ["child"]
    assert lua.json("queues", T0, "q")["depends"] == 1


# Dependency cycles would wait forever in qless-core; the protocol asks to do better and the
# reliability plan (A7) asks for them to be refused, writing nothing.
def test_self_dependency_is_refused(lua, keyspace):
    before = keyspace()
    expect_error(lua, r"Put\(\): .*itself.*", "put", T0, "c", "q", "a", "K", "{}", 0,
                 "depends", '["a"]')
    assert keyspace() == before


def test_cycle_through_put_is_refused(lua, redis_client, keyspace):
    put(lua, T0, "a")
    put(lua, T0, "b", depends=["a"])
    before = keyspace()
    expect_error(lua, r"Put\(\): .*cycle.*", "put", T0 + 1, "c", "q", "a", "K", "{}", 0,
                 "depends", '["b"]')
    assert keyspace() == before


def test_cycle_through_depends_on_is_refused(lua, keyspace):
    put(lua, T0, "x", "other")
    put(lua, T0, "y", depends=["x"])
    put(lua, T0, "z", depends=["y"])
    before = keyspace()
    expect_error(lua, r"Depends\(\): .*cycle.*", "depends", T0, "y", "on", "z")
    expect_error(lua, r"Depends\(\): .*itself.*", "depends", T0, "y", "on", "y")
    assert keyspace() == before
