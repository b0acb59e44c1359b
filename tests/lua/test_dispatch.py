"""The dispatcher: keys, command name and `now` (protocol §1.1)."""

from __future__ import annotations

import re

import pytest
import redis

from tests.lua.helpers import T0, error_message, expect_error, put


def test_keys_are_refused(lua):
    with pytest.raises(redis.ResponseError) as info:
        lua.script(keys=["ql:j:x"], args=["get", T0, "x"])
    assert error_message(info.value) == "No Keys should be provided"


def test_missing_command(lua):
    with pytest.raises(redis.ResponseError) as info:
        lua.script(keys=[], args=[])
    assert error_message(info.value) == "Must provide a command"


@pytest.mark.parametrize("name", ["bogus", "PUT", "recur.backlog", "throttle.set"])
def test_unknown_command(lua, name):
    expect_error(lua, rf"Unknown command {re.escape(name)}", name, T0)


@pytest.mark.parametrize("now", ["abc", "", "12abc"])
def test_now_not_a_number(lua, now):
    expect_error(lua, rf'Arg "now" missing or not a number:\s*{now}', "get", now, "x")


def test_now_missing(lua):
    with pytest.raises(redis.ResponseError) as info:
        lua.script(keys=[], args=["get"])
    assert re.fullmatch(r'Arg "now" missing or not a number.*', error_message(info.value))


def test_now_may_be_a_float_string(lua, redis_client):
    assert put(lua, f"{T0}.25", "j1") == "j1"
    assert redis_client.hget("ql:j:j1", "time") == f"{T0 + 0.25:.20f}"


def test_every_command_requires_now_even_when_unused(lua):
    expect_error(lua, r'Arg "now" missing or not a number: abc', "config.get", "abc")
