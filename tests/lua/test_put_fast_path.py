"""`put` with no tags and no dependencies ('[]', skipped checks) writes exactly what the
checked path writes: the same keys, hash fields, history and events, byte for byte."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import EventRecorder, LuaScript, snapshot
from tests.lua.helpers import T0, expect_error

DATA = '{"args":[1],"kwargs":{}}'


def put_and_record(lua: LuaScript, events: EventRecorder, *options: str) -> tuple[Any, ...]:
    """Keyspace, job hash, history and events after a new put then a re-put of one jid."""
    events.clear()
    lua("put", T0, "w", "q", "jid-1", "k", DATA, 0, *options)
    lua("put", T0 + 1, "w", "q", "jid-1", "k", DATA, 0, *options)
    client = lua.client
    state = (client.hgetall("ql:j:jid-1"), client.lrange("ql:j:jid-1-history", 0, -1),
             sorted(client.keys("*")), events.drain(), snapshot(client))
    client.flushall()
    return state


@pytest.mark.parametrize("options", [
    ("tags", "[]", "depends", "[]"),
    ("tags", "[]"),
    ("depends", "[]"),
])
def test_empty_lists_write_what_the_checked_path_writes(
    lua: LuaScript, events: EventRecorder, options: tuple[str, ...]
) -> None:
    fast = put_and_record(lua, events, *options)
    # '[ ]' is the same empty list, but not the literal '[]': it goes through json_list.
    checked = put_and_record(lua, events, *(v if v != "[]" else "[ ]" for v in options))
    assert fast == checked
    assert fast[0]["tags"] == "{}"


def test_empty_tags_clear_the_tags_of_a_re_put_job(lua: LuaScript, redis_client: Any) -> None:
    lua("put", T0, "w", "q", "jid-1", "k", DATA, 0, "tags", '["a"]')
    lua("put", T0 + 1, "w", "q", "jid-1", "k", DATA, 0, "tags", "[]")
    assert redis_client.hget("ql:j:jid-1", "tags") == "{}"
    assert redis_client.zcard("ql:t:a") == 0


def test_other_values_are_still_checked(lua: LuaScript, keyspace: Any) -> None:
    before = keyspace()
    expect_error(lua, re.escape('Put(): Arg "tags" not JSON"x"'), "put", T0, "w", "q", "j",
                 "k", DATA, 0, "tags", '"x"')
    expect_error(lua, "Expected .*", "put", T0, "w", "q", "j", "k", DATA, 0, "depends", "[x")
    expect_error(lua, re.escape('Put(): Arg "retries" not a number: 2.5'), "put", T0, "w", "q",
                 "j", "k", DATA, 0, "tags", "[]", "retries", "2.5")
    assert keyspace() == before


@pytest.mark.parametrize(("options", "priority", "retries"), [
    ((), "0", "5"),  # the defaults, stored as constant text
    (("priority", "0", "retries", "5"), "0", "5"),
    (("priority", "-0", "retries", "0"), "-0", "0"),  # -0 keeps its sign, as Redis prints it
    (("priority", "2.5", "retries", "3"), "2.5", "3"),
    (("priority", "-7", "retries", "12"), "-7", "12"),
])
def test_priority_and_retries_are_stored_as_redis_prints_them(
    lua: LuaScript, options: tuple[str, ...], priority: str, retries: str
) -> None:
    lua("put", T0, "w", "q", "jid-1", "k", DATA, 0, *options)
    stored = lua.client.hmget("ql:j:jid-1", "priority", "retries", "remaining")
    assert stored == [priority, retries, retries]
    # The same text Redis gives the number itself, through a script's number argument.
    for text in (priority, retries):
        echoed = lua.client.eval("redis.call('set', KEYS[1], tonumber(ARGV[1])) "
                                 "return redis.call('get', KEYS[1])", 1, "echo", text)
        assert echoed == text
