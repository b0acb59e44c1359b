"""track / untrack and the tracked listing (protocol §1.3, §3.13)."""

from __future__ import annotations

from tests.lua.helpers import T0, expect_error, get, jids, listish, put


def test_track_replies_json_one_and_records_time(lua, redis_client):
    put(lua, T0, "j1")
    assert lua("track", T0 + 3, "track", "j1") == "1"  # a JSON string, like every track reply
    assert redis_client.zscore("ql:tracked", "j1") == T0 + 3
    assert get(lua, "j1")["tracked"] is True


def test_untrack_removes_tracking(lua, redis_client):
    put(lua, T0, "j1")
    lua("track", T0, "track", "j1")
    assert lua("track", T0, "untrack", "j1") == "1"
    assert redis_client.zscore("ql:tracked", "j1") is None
    assert get(lua, "j1")["tracked"] is False


def test_track_again_and_untrack_again_reply_zero(lua):
    put(lua, T0, "j1")
    lua("track", T0, "track", "j1")
    assert lua("track", T0, "track", "j1") == "0"
    lua("track", T0, "untrack", "j1")
    assert lua("track", T0, "untrack", "j1") == "0"


def test_tracked_listing_when_empty(lua):
    assert lua.json("track", T0) == {"jobs": {}, "expired": {}}


def test_tracked_listing_returns_job_objects_and_expired_jids(lua):
    put(lua, T0, "a")
    put(lua, T0, "b")
    lua("track", T0, "track", "a")
    lua("track", T0, "track", "b")
    lua("cancel", T0, "b")
    listing = lua.json("track", T0)
    assert jids(listish(listing["jobs"])) == ["a"]
    assert listing["jobs"][0]["tracked"] is True
    assert listish(listing["expired"]) == ["b"]


def test_track_missing_jid(lua):
    expect_error(lua, r'Track\(\): Arg "jid" missing', "track", T0, "track")


def test_track_unknown_job(lua):
    expect_error(lua, r"Track\(\): Job does not exist", "track", T0, "track", "nope")


def test_track_unknown_action(lua):
    put(lua, T0, "j1")
    expect_error(lua, r'Track\(\): Unknown action "follow"', "track", T0, "follow", "j1")
