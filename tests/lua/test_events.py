"""pub/sub events: channel and exact JSON text of every payload (protocol §4)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import T0, cjson_text, pop, put

EXPIRY = T0 + 60
TRACKED_CHANNELS = (
    "ql:put", "ql:popped", "ql:completed", "ql:failed", "ql:stalled", "ql:canceled",
)


def assert_payload(redis_client, text, pairs):
    """The payload parses to these fields and is byte-identical to cjson's text for them."""
    assert json.loads(text) == {name: value for name, value in pairs if value is not None}
    assert text == cjson_text(redis_client, pairs)


def only(payloads):
    """Exactly one payload was received; return it."""
    assert len(payloads) == 1, payloads
    return payloads[0]


@pytest.fixture
def running(lua, events):
    """`j1` in q, popped by w1 at T0; events recorded so far are forgotten."""
    put(lua, T0, "j1", "q", retries=0)
    pop(lua, T0, "q", "w1")
    events.clear()
    return "j1"


def test_put_logs_put(lua, events, redis_client):
    put(lua, T0, "j1", "q")
    assert_payload(
        redis_client, only(events.on("ql:log")), [("jid", "j1"), ("event", "put"), ("queue", "q")]
    )


def test_complete_logs_completed(lua, events, redis_client, running):
    lua("complete", T0 + 1, "j1", "w1", "q", "{}")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "j1"), ("event", "completed"), ("queue", "q")],
    )


def test_complete_with_next_logs_advanced(lua, events, redis_client, running):
    lua("complete", T0 + 1, "j1", "w1", "q", "{}", "next", "q2")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "j1"), ("event", "advanced"), ("queue", "q"), ("to", "q2")],
    )


def test_fail_logs_failed(lua, events, redis_client, running):
    lua("fail", T0 + 1, "j1", "w1", "boom", "it broke")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "j1"), ("event", "failed"), ("worker", "w1"), ("group", "boom"),
         ("message", "it broke")],
    )


def test_lock_expiry_notice_logs_lock_lost_to_log_and_worker(lua, events, redis_client, running):
    pop(lua, EXPIRY + 1, "q", "w2")
    pairs = [("jid", "j1"), ("event", "lock_lost"), ("worker", "w1")]
    assert_payload(redis_client, only(events.on("ql:log")), pairs)
    assert_payload(redis_client, only(events.on("ql:w:w1")), pairs)
    assert events.on("ql:w:w2") == []


def test_exhaustion_logs_failed_with_group_first(lua, events, redis_client, running):
    pop(lua, EXPIRY + 1, "q", "w2")
    events.clear()
    pop(lua, EXPIRY + 11, "q", "w2")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "j1"), ("event", "failed"), ("group", "failed-retries-q"), ("worker", "w1"),
         ("message", 'Job exhausted retries in queue "q"')],
    )


def test_timeout_logs_lock_lost(lua, events, redis_client, running):
    lua("timeout", T0 + 1, "j1")
    pairs = [("jid", "j1"), ("event", "lock_lost"), ("worker", "w1")]
    assert_payload(redis_client, only(events.on("ql:log")), pairs)
    assert_payload(redis_client, only(events.on("ql:w:w1")), pairs)


def test_put_by_another_worker_logs_lock_lost(lua, events, redis_client, running):
    put(lua, T0 + 1, "j1", "q", worker="w9")
    pairs = [("jid", "j1"), ("event", "lock_lost"), ("worker", "w1")]
    assert_payload(redis_client, only(events.on("ql:w:w1")), pairs)
    logs = events.on("ql:log")
    assert len(logs) == 2
    assert_payload(redis_client, next(text for text in logs if "lock_lost" in text), pairs)
    assert_payload(
        redis_client, next(text for text in logs if "lock_lost" not in text),
        [("jid", "j1"), ("event", "put"), ("queue", "q")],
    )


def test_put_by_the_owning_worker_does_not_log_lock_lost(lua, events, running):
    put(lua, T0 + 1, "j1", "q", worker="w1")
    assert events.on("ql:w:w1") == []
    assert [json.loads(text)["event"] for text in events.on("ql:log")] == ["put"]


def test_cancel_of_owned_job_logs_to_log_and_worker(lua, events, redis_client, running):
    lua("cancel", T0 + 1, "j1")
    pairs = [("jid", "j1"), ("event", "canceled"), ("worker", "w1"), ("queue", "q")]
    assert_payload(redis_client, only(events.on("ql:log")), pairs)
    assert_payload(redis_client, only(events.on("ql:w:w1")), pairs)


def test_cancel_of_waiting_job_logs_only_to_log(lua, events, redis_client):
    put(lua, T0, "j1", "q")
    events.clear()
    lua("cancel", T0, "j1")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "j1"), ("event", "canceled"), ("worker", ""), ("queue", "q")],
    )
    assert [name for name, _ in events.drain() if name.startswith("ql:w:")] == []


def test_cancel_of_unknown_jid_still_logs(lua, events, redis_client):
    # The job hash is gone, so its worker and queue read back as Redis nil (Lua false).
    lua("cancel", T0, "nope")
    assert_payload(
        redis_client, only(events.on("ql:log")),
        [("jid", "nope"), ("event", "canceled"), ("worker", False), ("queue", False)],
    )


def test_config_set_and_unset_log(lua, events, redis_client):
    lua("config.set", T0, "heartbeat", 30)
    lua("config.unset", T0, "heartbeat")
    set_text, unset_text = events.on("ql:log")
    assert_payload(
        redis_client, set_text,
        [("event", "config_set"), ("option", "heartbeat"), ("value", "30")],
    )
    assert_payload(redis_client, unset_text, [("event", "config_unset"), ("option", "heartbeat")])


def test_track_and_untrack_publish_the_jid(lua, events):
    put(lua, T0, "j1")
    lua("track", T0, "track", "j1")
    lua("track", T0, "untrack", "j1")
    assert events.on("ql:track") == ["j1"]
    assert events.on("ql:untrack") == ["j1"]


def test_tracked_job_lifecycle_channels(lua, events):
    put(lua, T0, "j1")
    lua("track", T0, "track", "j1")
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    lua("complete", T0, "j1", "w1", "q", "{}", "next", "q2")
    pop(lua, T0, "q2", "w1")
    lua("complete", T0, "j1", "w1", "q2", "{}")
    put(lua, T0, "j1")
    pop(lua, T0, "q", "w1")
    lua("fail", T0, "j1", "w1", "g", "m")
    lua("cancel", T0, "j1")
    assert events.on("ql:put") == ["j1", "j1"]
    assert events.on("ql:popped") == ["j1", "j1", "j1"]
    assert events.on("ql:completed") == ["j1", "j1"]
    assert events.on("ql:failed") == ["j1"]
    assert events.on("ql:canceled") == ["j1"]


def test_tracked_job_stall_and_exhaustion_channels(lua, events):
    put(lua, T0, "j1", retries=0)
    lua("track", T0, "track", "j1")
    pop(lua, T0, "q", "w1")
    pop(lua, EXPIRY + 1, "q", "w2")
    assert events.on("ql:stalled") == ["j1"]
    pop(lua, EXPIRY + 11, "q", "w2")
    assert events.on("ql:failed") == ["j1"]


def test_retry_exhaustion_publishes_failed_only_for_tracked(lua, events):
    put(lua, T0, "j1", retries=0)
    lua("track", T0, "track", "j1")
    pop(lua, T0, "q", "w1")
    events.clear()
    assert lua("retry", T0 + 1, "j1", "q", "w1") == -1
    assert events.on("ql:failed") == ["j1"]
    assert events.on("ql:log") == []


def test_untracked_jobs_publish_no_tracked_channels(lua, events):
    put(lua, T0, "j1", retries=0)
    pop(lua, T0, "q", "w1")
    pop(lua, EXPIRY + 1, "q", "w2")
    pop(lua, EXPIRY + 11, "q", "w2")
    put(lua, T0, "j2")
    pop(lua, T0, "q", "w1")
    lua("complete", T0, "j2", "w1", "q", "{}")
    lua("cancel", T0, "j2")
    assert [name for name, _ in events.drain() if name in TRACKED_CHANNELS] == []


def test_spawned_recurring_jobs_publish_nothing(lua, events):
    lua("recur", T0, "q", "r", "K", "{}", "interval", 60, 0)
    events.clear()
    lua("peek", T0 + 300, "q", 10)
    assert events.drain() == []
