"""`put.many` (extension): many plain puts in one call, each exactly a single `put`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import EventRecorder, LuaScript, snapshot
from tests.lua.helpers import T0, expect_error

DATA = '{"args":[1],"kwargs":{}}'
STEP = 1e-6


def group(jid: str, *options: Any, queue: str = "q") -> list[Any]:
    """One put's arguments, prefixed by their count."""
    args = ["w", queue, jid, "k", DATA, 0, *options]
    return [len(args), *args]


def world(lua: LuaScript) -> None:
    """A tracked job and a job with tags, to be re-put; a known queue."""
    lua("put", T0 - 10, "w", "q", "old", "k", "{}", 0, "tags", '["x"]')
    lua("put", T0 - 10, "w", "q", "watched", "k", "{}", 0)
    lua("track", T0 - 10, "track", "watched")


GROUPS: list[tuple[str, tuple[Any, ...]]] = [
    ("new", ()),
    ("old", ("tags", "[]", "depends", "[]")),
    ("watched", ("priority", 5, "retries", 2)),
    ("tagged", ("tags", '["a","b"]')),
    ("later", ("depends", "[]")),
]


def test_each_put_writes_what_a_single_put_at_its_time_writes(
    lua: LuaScript, events: EventRecorder
) -> None:
    world(lua)
    events.clear()
    reply = lua("put.many", T0, *(v for jid, opts in GROUPS for v in group(jid, *opts)))
    assert reply == [jid for jid, _ in GROUPS]
    many = (snapshot(lua.client), events.drain())
    lua.client.flushall()
    world(lua)
    events.clear()
    for k, (jid, opts) in enumerate(GROUPS):
        lua("put", T0 + k * STEP, "w", "q", jid, "k", DATA, 0, *opts)
    assert many == (snapshot(lua.client), events.drain())


def test_jobs_pop_in_the_order_they_were_given(lua: LuaScript) -> None:
    jids = [f"j{n:02d}" for n in range(30, 0, -1)]  # not in jid order
    lua("put.many", T0, *(v for jid in jids for v in group(jid)))
    popped = json.loads(lua("pop", T0 + 1, "q", "w", 30))
    assert [job["jid"] for job in popped] == jids


@pytest.mark.parametrize(("args", "message"), [
    (("x",), r'Put\.many\(\): Arg "count" missing or not a number: x'),
    ((0, *group("a")[1:]), r'Put\.many\(\): Arg "count" missing or not a number: 0'),
    ((2.5, "w", "q"), r'Put\.many\(\): Arg "count" missing or not a number: 2\.5'),
    ((*group("a"), 9), r'Put\.many\(\): Arg "count" missing or not a number: 9'),
    ((*group("a"), 6, "w", "q", "b", "k", "{x", 0), "Expected .*"),
    ((*group("a"), 6, "w", "q", "b", "k", "{}", "soon"),
     r'Put\(\): Arg "delay" not a number: soon'),
    ((*group("a"), 6, "w", "", "b", "k", "{}", 0), r'Put\(\): Arg "queue" missing or empty'),
    ((*group("a"), *group("b", "depends", '["a"]')),
     r'Put\.many\(\): Arg "depends" not supported: \["a"\]'),
])
def test_a_bad_group_anywhere_writes_nothing(
    lua: LuaScript, events: EventRecorder, args: tuple[Any, ...], message: str
) -> None:
    world(lua)
    before = snapshot(lua.client)
    events.clear()
    expect_error(lua, message, "put.many", T0, *args)
    assert snapshot(lua.client) == before
    assert events.drain() == []


def test_no_group_puts_nothing(lua: LuaScript) -> None:
    assert lua("put.many", T0) == []
    assert lua.client.keys("*") == []
