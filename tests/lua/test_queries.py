"""Read commands: get, multiget, jobs, queues, workers, length, stats, log, history cap."""

from __future__ import annotations

import json
import math

import pytest

from tests.lua.helpers import DAY, JOB_KEYS, T0, expect_error, get, pop, put, whats


def test_get_of_unknown_job_is_nil(lua):
    assert lua("get", T0, "nope") is None


def test_get_replies_job_object_with_exact_keys_and_types(lua):
    put(lua, T0, "j1", data='{"a": 1}', priority=2, retries=3)
    raw = lua("get", T0, "j1")
    assert isinstance(raw, str)
    job = json.loads(raw)
    assert set(job) == JOB_KEYS
    assert job == {
        "jid": "j1", "klass": "Klass", "state": "waiting", "queue": "q", "worker": "",
        "tracked": False, "priority": 2, "expires": 0, "retries": 3, "remaining": 3,
        "data": '{"a": 1}', "tags": {}, "history": [{"when": T0, "what": "put", "q": "q"}],
        "failure": {}, "spawned_from_jid": False, "dependents": {}, "dependencies": {},
    }


def test_get_history_objects_merge_extra_fields(lua):
    put(lua, T0, "j1")
    pop(lua, T0 + 1, "q", "w1")
    lua("complete", T0 + 2, "j1", "w1", "q", "{}")
    assert get(lua, "j1")["history"] == [
        {"when": T0, "what": "put", "q": "q"},
        {"when": T0 + 1, "what": "popped", "worker": "w1"},
        {"when": T0 + 2, "what": "done"},
    ]


def test_multiget_skips_unknown_jids(lua):
    put(lua, T0, "a")
    put(lua, T0, "b")
    jobs = lua.json("multiget", T0, "a", "nope", "b")
    assert [job["jid"] for job in jobs] == ["a", "b"]


def test_multiget_of_nothing_known_is_empty_object(lua):
    assert lua("multiget", T0, "nope") == "{}"


def test_jobs_by_state_are_plain_arrays(lua):
    put(lua, T0, "running")
    pop(lua, T0, "q", "w1")
    put(lua, T0, "waiting")
    put(lua, T0, "sched", delay=100)
    put(lua, T0, "dep", depends=["waiting"])
    assert lua("jobs", T0, "running", "q") == ["running"]
    assert lua("jobs", T0, "stalled", "q") == []
    assert lua("jobs", T0, "scheduled", "q") == ["sched"]
    assert lua("jobs", T0, "depends", "q") == ["dep"]
    assert lua("jobs", T0, "recurring", "q") == []


def test_jobs_complete_newest_first_with_paging(lua):
    for index in range(3):
        put(lua, T0, f"c{index}")
        pop(lua, T0, "q", "w1")
        lua("complete", T0 + index, f"c{index}", "w1", "q", "{}")
    assert lua("jobs", T0, "complete") == ["c2", "c1", "c0"]
    assert lua("jobs", T0, "complete", 1, 1) == ["c1"]


def test_jobs_paging_for_queue_states(lua):
    for index in range(3):
        put(lua, T0, f"s{index}", delay=10 + index)
    assert lua("jobs", T0, "scheduled", "q", 1, 1) == ["s1"]


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ([], r'Jobs\(\): Arg "state" missing'),
        (["running"], r'Jobs\(\): Arg "queue" missing'),
        (["bogus", "q"], r'Jobs\(\): Unknown type "bogus"'),
        (["running", "q", "x"], r'Jobs\(\): Arg "offset" not a number.*'),
        (["running", "q", 0, "y"], r'Jobs\(\): Arg "count" not a number.*'),
        (["complete", "x"], r'Jobs\(\): Arg "offset" not a number.*'),
    ],
)
def test_jobs_validation(lua, args, pattern):
    expect_error(lua, pattern, "jobs", T0, *args)


def test_queues_counts_object(lua):
    put(lua, T0, "run")
    pop(lua, T0, "q", "w1")
    put(lua, T0, "stall")
    pop(lua, T0 - 100, "q", "w1")
    put(lua, T0, "wait")
    put(lua, T0, "sched", delay=100)
    put(lua, T0, "due", delay=5)
    put(lua, T0, "dep", depends=["wait"])
    lua("recur", T0, "q", "r", "K", "{}", "interval", 60, 1000)
    lua("pause", T0, "q")
    assert lua.json("queues", T0 + 10, "q") == {
        "name": "q", "waiting": 2, "running": 1, "stalled": 1, "scheduled": 1,
        "depends": 1, "recurring": 1, "paused": True,
    }


def test_queues_list_in_first_seen_order(lua):
    put(lua, T0, "a", "zeta")
    put(lua, T0 + 1, "b", "alpha")
    counts = lua.json("queues", T0)
    assert [item["name"] for item in counts] == ["zeta", "alpha"]
    assert counts[1]["paused"] is False


def test_queues_with_none_is_empty_object(lua):
    assert lua("queues", T0) == "{}"


def test_queue_forget_only_drops_the_name(lua, redis_client):
    put(lua, T0, "a", "q")
    assert lua("queue.forget", T0, "q") is None
    assert redis_client.zscore("ql:queues", "q") is None
    assert redis_client.zscore("ql:q:q-work", "a") is not None


def test_workers_lists_newest_active_first(lua):
    for index, worker in enumerate(["old", "new"]):
        put(lua, T0, f"j{index}")
        pop(lua, T0 + index, "q", worker)
    lua("heartbeat", T0 + 50, "j0", "old")
    assert lua.json("workers", T0 + 200) == [
        {"name": "old", "jobs": 0, "stalled": 1},
        {"name": "new", "jobs": 0, "stalled": 1},
    ]
    assert lua.json("workers", T0 + 2)[1] == {"name": "new", "jobs": 1, "stalled": 0}


def test_worker_detail(lua):
    put(lua, T0, "a")
    put(lua, T0 + 1, "b")
    pop(lua, T0, "q", "w1", 1)
    pop(lua, T0 + 30, "q", "w1", 1)
    assert lua.json("workers", T0 + 70, "w1") == {"jobs": ["b"], "stalled": ["a"]}
    assert lua.json("workers", T0, "nobody") == {"jobs": {}, "stalled": {}}


def test_workers_drops_workers_past_max_worker_age(lua, redis_client):
    put(lua, T0, "a")
    pop(lua, T0, "q", "w1")
    lua.json("workers", T0 + 86400 + 100)
    assert redis_client.zscore("ql:workers", "w1") is None
    assert not redis_client.exists("ql:w:w1:jobs")


def test_worker_deregister_only_drops_the_name(lua, redis_client):
    put(lua, T0, "a")
    pop(lua, T0, "q", "w1")
    assert lua("worker.deregister", T0, "w1") is None
    assert redis_client.zscore("ql:workers", "w1") is None
    assert redis_client.zscore("ql:w:w1:jobs", "a") is not None


def test_log_appends_history_entry(lua, redis_client):
    put(lua, T0, "j1")
    assert lua("log", T0 + 1.5, "j1", "checked", '{"by": "me"}') is None
    assert get(lua, "j1")["history"][-1] == {"when": T0 + 1, "what": "checked", "by": "me"}
    lua("log", T0 + 2, "j1", "plain")
    assert get(lua, "j1")["history"][-1] == {"when": T0 + 2, "what": "plain"}


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ([], r'Log\(\): Argument "jid" missing'),
        (["j1"], r'Log\(\): Argument "message" missing'),
        (["nope", "msg"], r"Log\(\): Job nope does not exist"),
    ],
)
def test_log_validation(lua, args, pattern):
    put(lua, T0, "j1")
    expect_error(lua, pattern, "log", T0, *args)


def test_history_is_capped_keeping_the_first_entry(lua, redis_client):
    lua("config.set", T0, "max-job-history", 3)
    put(lua, T0, "j1")
    for index in range(5):
        lua("log", T0 + index, "j1", f"e{index}")
    assert whats(redis_client, "j1") == ["put", "e3", "e4"]


def test_history_unbounded_when_cap_is_zero(lua, redis_client):
    lua("config.set", T0, "max-job-history", 0)
    put(lua, T0, "j1")
    for index in range(120):
        lua("log", T0, "j1", f"e{index}")
    assert redis_client.llen("ql:j:j1-history") == 121


def test_history_default_cap_is_100(lua, redis_client):
    put(lua, T0, "j1")
    for index in range(120):
        lua("log", T0, "j1", f"e{index}")
    assert redis_client.llen("ql:j:j1-history") == 100
    assert whats(redis_client, "j1")[:2] == ["put", "e21"]


def _empty_side():
    return {"count": 0, "mean": 0, "std": 0, "histogram": [0] * 148}


def test_stats_for_a_quiet_day(lua):
    assert lua.json("stats", T0, "q", T0) == {
        "retries": 0, "failed": 0, "failures": 0, "wait": _empty_side(), "run": _empty_side(),
    }


@pytest.mark.parametrize(
    ("seconds", "field", "index"),
    [
        (0.5, "s0", 0), (59.9, "s59", 59), (60, "m1", 60), (3599, "m59", 118),
        (3600, "h1", 119), (86399, "h23", 141), (86400, "d1", 142), (6 * 86400, "d6", 147),
    ],
)
def test_wait_histogram_buckets(lua, redis_client, seconds, field, index):
    put(lua, T0, "j1")
    popped_at = T0 + seconds
    pop(lua, popped_at, "q", "w1")
    day = int(popped_at - popped_at % 86400)
    assert int(redis_client.hget(f"ql:s:wait:{day}:q", field)) == 1
    stats = lua.json("stats", popped_at, "q", popped_at)
    histogram = stats["wait"]["histogram"]
    assert len(histogram) == 148
    assert histogram[index] == 1
    assert sum(histogram) == 1


def test_wait_mean_and_std(lua, redis_client):
    put(lua, T0, "a")
    put(lua, T0, "b")
    pop(lua, T0 + 2, "q", "w1")
    pop(lua, T0 + 4, "q", "w1")
    raw = redis_client.hgetall(f"ql:s:wait:{DAY}:q")
    assert (int(raw["total"]), float(raw["mean"]), float(raw["vk"])) == (2, 3.0, 2.0)
    wait = lua.json("stats", T0, "q", T0)["wait"]
    assert wait["count"] == 2
    assert wait["mean"] == pytest.approx(3.0)
    assert wait["std"] == pytest.approx(math.sqrt(2.0))


def test_run_stats_and_counters(lua):
    put(lua, T0, "a")
    put(lua, T0, "b")
    pop(lua, T0, "q", "w1", 2)
    lua("complete", T0 + 90, "a", "w1", "q", "{}")
    lua("fail", T0 + 1, "b", "w1", "g", "m")
    stats = lua.json("stats", T0, "q", DAY + 5)
    assert stats["run"]["count"] == 1
    assert stats["run"]["mean"] == pytest.approx(90)
    assert stats["run"]["histogram"][60] == 1
    assert (stats["failures"], stats["failed"], stats["retries"]) == (1, 1, 0)


@pytest.mark.parametrize("args", [["q"], ["q", "yesterday"]])
def test_stats_date_missing_or_not_a_number(lua, args):
    expect_error(lua, r'Stats\(\): Arg "date" missing or not a number.*', "stats", T0, *args)
