"""One job through put, pop, heartbeat and complete: replies, keys and events."""

from __future__ import annotations

import json

from tests.lua.helpers import DAY, T0, get, history, pop, put


def test_full_cycle(lua, redis_client, events):
    assert put(lua, T0, "j1", tags=["t"]) == "j1"
    assert redis_client.zscore("ql:q:q-work", "j1") == -T0 / 1e10
    assert redis_client.zscore("ql:queues", "q") == T0
    assert get(lua, "j1")["state"] == "waiting"

    [job] = pop(lua, T0 + 2, worker="w1")
    assert (job["jid"], job["state"], job["worker"]) == ("j1", "running", "w1")
    assert job["expires"] == T0 + 62
    assert [entry["what"] for entry in job["history"]] == ["put", "popped"]
    assert redis_client.zscore("ql:q:q-locks", "j1") == T0 + 62
    assert redis_client.zscore("ql:w:w1:jobs", "j1") == T0 + 62
    assert redis_client.zscore("ql:workers", "w1") == T0 + 2
    assert not redis_client.zcard("ql:q:q-work")

    assert lua("heartbeat", T0 + 30, "j1", "w1") == T0 + 90
    assert redis_client.hget("ql:j:j1", "expires") == str(T0 + 90)

    assert lua("complete", T0 + 40, "j1", "w1", "q", '{"done": true}') == "complete"
    job = get(lua, "j1")
    assert (job["state"], job["queue"], job["worker"]) == ("complete", "", "")
    assert job["data"] == '{"done": true}'
    assert [entry[1] for entry in history(redis_client, "j1")] == ["put", "popped", "done"]
    assert redis_client.zscore("ql:completed", "j1") == T0 + 40
    assert not redis_client.zcard("ql:q:q-locks")
    assert not redis_client.zcard("ql:w:w1:jobs")

    wait = redis_client.hgetall(f"ql:s:wait:{DAY}:q")
    assert (wait["total"], wait["mean"], wait["s2"]) == ("1", "2", "1")
    run = redis_client.hgetall(f"ql:s:run:{DAY}:q")
    assert (run["total"], run["mean"], run["s38"]) == ("1", "38", "1")

    assert [json.loads(payload) for payload in events.on("ql:log")] == [
        {"jid": "j1", "event": "put", "queue": "q"},
        {"jid": "j1", "event": "completed", "queue": "q"},
    ]


def test_counts_and_stats_after_the_cycle(lua):
    put(lua, T0, "j1")
    put(lua, T0, "j2")
    pop(lua, T0 + 1)
    counts = lua.json("queues", T0 + 2, "q")
    assert counts == {
        "name": "q", "waiting": 1, "running": 1, "stalled": 0, "scheduled": 0,
        "depends": 0, "recurring": 0, "paused": False,
    }
    stats = lua.json("stats", T0 + 2, "q", T0)
    assert stats["wait"]["count"] == 1 and len(stats["wait"]["histogram"]) == 148
