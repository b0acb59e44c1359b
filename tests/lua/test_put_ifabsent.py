"""put.ifabsent, the extension put that never replaces a job: policies, reply, events."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lua.helpers import T0, expect_error, get, pop, put

ARGS = ("client", "q", "j1", "K", '{"n": 1}', 0)


def ifabsent(lua: Any, policy: str, now: float = T0, *args: Any) -> list[str]:
    """Call put.ifabsent with put's usual arguments (or the given ones)."""
    return list(lua("put.ifabsent", now, policy, *(args or ARGS)))


@pytest.mark.parametrize("policy", ["any", "active"])
def test_absent_job_is_put_like_put(lua, events, policy):
    assert ifabsent(lua, policy) == ["j1", "put"]
    job = get(lua, "j1")
    fields = (job["state"], job["queue"], job["klass"], job["data"])
    assert fields == ("waiting", "q", "K", '{"n": 1}')
    assert [entry["what"] for entry in job["history"]] == ["put"]
    assert events.on("ql:log") == ['{"jid":"j1","event":"put","queue":"q"}']


def test_options_and_delay_apply_as_in_put(lua):
    reply = ifabsent(lua, "any", T0, "client", "q", "j1", "K", "{}", 30,
                     "priority", 4, "tags", '["a"]', "retries", 2)
    assert reply == ["j1", "put"]
    job = get(lua, "j1")
    fields = (job["state"], job["priority"], job["tags"], job["retries"])
    assert fields == ("scheduled", 4, ["a"], 2)


@pytest.mark.parametrize("policy", ["any", "active"])
@pytest.mark.parametrize("state", ["waiting", "running", "failed", "scheduled"])
def test_existing_job_blocks_and_nothing_changes(lua, keyspace, events, policy, state):
    put(lua, T0, "j1", "q", delay=600 if state == "scheduled" else 0)
    if state in ("running", "failed"):
        pop(lua, T0, "q", "w1")
    if state == "failed":
        lua("fail", T0, "j1", "w1", "g", "boom")
    before = keyspace()
    events.clear()
    reply = ifabsent(lua, policy, T0 + 5, "client", "other", "j1", "K2", '{"n": 2}', 0,
                     "priority", 9)
    assert reply == ["j1", state]
    assert keyspace() == before
    assert events.drain() == []


def test_completed_job_blocks_any_but_not_active(lua, keyspace):
    put(lua, T0, "j1", "q")
    pop(lua, T0, "q", "w1")
    lua("complete", T0, "j1", "w1", "q", "{}")
    before = keyspace()
    assert ifabsent(lua, "any", T0 + 1) == ["j1", "complete"]
    assert keyspace() == before
    assert ifabsent(lua, "active", T0 + 2) == ["j1", "put"]
    job = get(lua, "j1")
    assert (job["state"], job["data"]) == ("waiting", '{"n": 1}')
    assert [entry["what"] for entry in job["history"]] == ["put", "popped", "done", "put"]


def test_a_blocked_call_still_checks_its_arguments(lua):
    put(lua, T0, "j1", "q")
    expect_error(lua, r'Put\(\): Arg "delay" not a number: soon', "put.ifabsent", T0, "any",
                 "client", "q", "j1", "K", "{}", "soon")


def test_unknown_policy_is_refused(lua):
    expect_error(lua, r'Put\.ifabsent\(\): Arg "policy" must be "any" or "active": always',
                 "put.ifabsent", T0, "always", *ARGS)


def test_put_itself_still_replaces(lua):
    """The extension leaves put as it was: a put of an existing jid re-puts it."""
    put(lua, T0, "j1", "q")
    assert lua("put", T0 + 1, "client", "q2", "j1", "K", "{}", 0) == "j1"
    assert get(lua, "j1")["queue"] == "q2"
