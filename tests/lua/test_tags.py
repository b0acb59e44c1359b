"""tag add / remove / get / top (protocol §1.3, §3.13)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import T0, expect_error, put


def test_tag_add_replies_tag_list_and_indexes(lua, redis_client):
    put(lua, T0, "j1", tags=["a"])
    reply = lua("tag", T0 + 5, "add", "j1", "b", "c")
    assert isinstance(reply, str)
    assert json.loads(reply) == ["a", "b", "c"]
    assert json.loads(redis_client.hget("ql:j:j1", "tags")) == ["a", "b", "c"]
    assert redis_client.zscore("ql:t:b", "j1") == T0 + 5
    assert redis_client.zscore("ql:tags", "c") == 1


def test_tag_add_existing_tag_is_not_duplicated(lua, redis_client):
    put(lua, T0, "j1", tags=["a"])
    assert json.loads(lua("tag", T0, "add", "j1", "a")) == ["a"]
    assert redis_client.zscore("ql:tags", "a") == 1


def test_tag_remove_replies_remaining_tags(lua, redis_client):
    put(lua, T0, "j1", tags=["a", "b"])
    assert json.loads(lua("tag", T0, "remove", "j1", "a")) == ["b"]
    assert redis_client.zscore("ql:t:a", "j1") is None
    assert redis_client.zscore("ql:tags", "a") in (None, 0)


def test_tag_remove_last_tag_replies_empty_object(lua):
    put(lua, T0, "j1", tags=["a"])
    assert lua("tag", T0, "remove", "j1", "a") == "{}"


def test_tag_get_pages_jobs(lua):
    for index in range(4):
        put(lua, T0 + index, f"j{index}", tags=["t"])
    assert lua.json("tag", T0, "get", "t") == {"total": 4, "jobs": ["j0", "j1", "j2", "j3"]}
    assert lua.json("tag", T0, "get", "t", 1, 2) == {"total": 4, "jobs": ["j1", "j2"]}


def test_tag_get_unknown_tag(lua):
    assert lua.json("tag", T0, "get", "none") == {"total": 0, "jobs": {}}


def test_tag_top_lists_tags_used_at_least_twice(lua):
    put(lua, T0, "a", tags=["x", "y", "z"])
    put(lua, T0, "b", tags=["x", "y"])
    put(lua, T0, "c", tags=["x"])
    assert lua.json("tag", T0, "top") == ["x", "y"]
    assert lua.json("tag", T0, "top", 1, 1) == ["y"]


def test_tag_top_with_no_popular_tags(lua):
    put(lua, T0, "a", tags=["x"])
    assert lua("tag", T0, "top") == "{}"


def test_tags_leave_the_index_when_job_is_canceled(lua, redis_client):
    put(lua, T0, "a", tags=["x"])
    lua("cancel", T0, "a")
    assert lua.json("tag", T0, "get", "x")["total"] == 0


def test_tag_add_unknown_job(lua):
    expect_error(lua, r"Tag\(\): Job nope does not exist", "tag", T0, "add", "nope", "t")


def test_tag_get_missing_tag(lua):
    expect_error(lua, r'Tag\(\): Arg "tag" missing', "tag", T0, "get")


@pytest.mark.parametrize("args", [["bogus", "j1"], []])
def test_tag_unknown_or_missing_command(lua, args):
    put(lua, T0, "j1")
    expect_error(
        lua,
        r'Tag\(\): Arg "command" must be "add", "remove", "get" or "top"'
        r'|Tag\(\): First argument must be "add", "remove" or "get"',
        "tag", T0, *args,
    )
