"""Where the script does better than qless-core: large calls, cycles, numeric config,
bounded housekeeping, lenient options, the qless-py legacy put."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
import redis

from tests.conftest import SCRIPT_PATH
from tests.lua.helpers import T0, error_message, expect_error, get, pop, put

MANY = 10_000
SWEEP = 100  # jobs one call may expire or release as housekeeping (base.lua)


def pipelined(lua: Any, calls: Iterable[tuple[Any, ...]]) -> list[Any]:
    """Run many script calls in pipelined batches; returns the replies in order."""
    replies: list[Any] = []
    pipe = lua.client.pipeline(transaction=False)
    for index, (command, now, *args) in enumerate(calls, 1):
        lua.script(keys=[], args=[command, now, *args], client=pipe)
        if index % 1000 == 0:
            replies += pipe.execute()
    return replies + pipe.execute()


def put_many(lua: Any, count: int, now: float = T0, delay: float = 0) -> list[str]:
    """Put `count` jobs j0..j<count-1> in queue q."""
    jids = [f"j{i}" for i in range(count)]
    pipelined(lua, (("put", now, "client", "q", jid, "K", "{}", delay) for jid in jids))
    return jids


def unchanged(keyspace: Any, call: Any) -> str:
    """Run a call that must fail; assert no key changed; return the error message."""
    before = keyspace()
    with pytest.raises(redis.ResponseError) as info:
        call()
    after = keyspace()
    assert {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)} == set()
    return error_message(info.value)


# --- large counts: nothing is unpacked whole into one redis.call ---------------------------


@pytest.mark.slow
def test_pop_and_peek_ten_thousand(lua, redis_client):
    put_many(lua, MANY)
    assert len(json.loads(lua("peek", T0 + 1, "q", MANY))) == MANY
    popped = pop(lua, T0 + 1, count=MANY)
    assert len(popped) == MANY and {job["state"] for job in popped} == {"running"}
    assert redis_client.zcard("ql:q:q-work") == 0
    assert redis_client.zcard("ql:q:q-locks") == MANY


@pytest.mark.slow
def test_timeout_and_multiget_ten_thousand(lua, redis_client):
    jids = put_many(lua, MANY)
    pop(lua, T0 + 1, count=MANY)
    assert lua("timeout", T0 + 2, *jids) is None
    assert redis_client.zcard("ql:q:q-work") == MANY
    jobs = json.loads(lua("multiget", T0 + 3, *jids, "missing"))
    assert len(jobs) == MANY and {job["state"] for job in jobs} == {"stalled"}


@pytest.mark.slow
def test_cancel_ten_thousand(lua, redis_client):
    jids = put_many(lua, MANY)
    assert lua("cancel", T0 + 1, *jids) == jids
    assert redis_client.zcard("ql:q:q-work") == 0
    assert not redis_client.keys("ql:j:*")


@pytest.mark.slow
def test_unfail_ten_thousand(lua, redis_client):
    jids = put_many(lua, MANY)
    pop(lua, T0 + 1, count=MANY)
    pipelined(lua, (("fail", T0 + 2, jid, "w1", "g", "boom") for jid in jids))
    assert redis_client.llen("ql:f:g") == MANY
    assert lua("unfail", T0 + 3, "q", "g", MANY) == MANY
    assert redis_client.zcard("ql:q:q-work") == MANY
    assert not redis_client.exists("ql:f:g") and not redis_client.sismember("ql:failures", "g")


# --- dependency cycles ----------------------------------------------------------------------


def test_put_refuses_self_dependency_of_new_and_existing_job(lua, keyspace):
    put(lua, T0, "a")
    for jid in ("a", "new"):
        message = unchanged(keyspace, lambda jid=jid: put(lua, T0 + 1, jid, depends=[jid]))
        assert message == f"Put(): Job {jid} cannot depend on itself"


def test_put_refuses_a_cycle(lua, keyspace):
    put(lua, T0, "a")
    put(lua, T0, "b", depends=["a"])
    put(lua, T0, "c", depends=["b"])
    message = unchanged(keyspace, lambda: put(lua, T0 + 1, "a", depends=["c"]))
    assert message == "Put(): Job a depending on c would create a dependency cycle"
    assert get(lua, "a")["state"] == "waiting"


def test_depends_on_refuses_a_cycle(lua, keyspace):
    put(lua, T0, "x")
    put(lua, T0, "a", depends=["x"])
    put(lua, T0, "b", depends=["a"])
    message = unchanged(keyspace, lambda: lua("depends", T0 + 1, "a", "on", "b"))
    assert message == "Depends(): Job a depending on b would create a dependency cycle"
    message = unchanged(keyspace, lambda: lua("depends", T0 + 1, "a", "on", "a"))
    assert message == "Depends(): Job a cannot depend on itself"


def test_complete_next_refuses_a_cycle(lua, keyspace):
    put(lua, T0, "a")
    put(lua, T0, "b", depends=["a"])
    pop(lua, T0 + 1)
    message = unchanged(
        keyspace,
        lambda: lua("complete", T0 + 2, "a", "w1", "q", "{}", "next", "q2", "depends", '["b"]'),
    )
    assert message == "Complete(): Job a depending on b would create a dependency cycle"
    assert get(lua, "a")["state"] == "running"


def test_unrelated_dependencies_are_still_accepted(lua):
    put(lua, T0, "a")
    put(lua, T0, "b", depends=["a"])
    assert put(lua, T0, "c", depends=["a", "b"]) == "c"
    assert get(lua, "c")["state"] == "depends"


# --- numeric config -------------------------------------------------------------------------

NUMERIC = [
    "heartbeat", "grace-period", "jobs-history", "jobs-history-count", "max-job-history",
    "max-worker-age", "stats-history", "histogram-history", "q-heartbeat", "q-max-concurrency",
]


@pytest.mark.parametrize("option", NUMERIC)
@pytest.mark.parametrize("value", ["abc", "nan", "inf", ""])
def test_config_set_refuses_non_numbers(lua, keyspace, events, option, value):
    message = unchanged(keyspace, lambda: lua("config.set", T0, option, value))
    assert message == f'config.set(): Arg "value" must be a number for "{option}": {value}'.rstrip()
    assert events.on("ql:log") == []


def test_config_set_accepts_numbers_and_free_text(lua, redis_client):
    lua("config.set", T0, "heartbeat", "30.5")
    lua("config.set", T0, "application", "my app")
    assert redis_client.hgetall("ql:config") == {"heartbeat": "30.5", "application": "my app"}


# --- bounded housekeeping -------------------------------------------------------------------


def completed_backlog(redis_client: redis.Redis, count: int, when: float) -> None:
    """`count` completed jobs, as complete leaves them, finished at `when`."""
    pipe = redis_client.pipeline(transaction=False)
    for i in range(count):
        jid = f"old{i}"
        fields = {"jid": jid, "state": "complete", "queue": "", "tags": '["t"]'}
        pipe.hset(f"ql:j:{jid}", mapping=fields)
        pipe.rpush(f"ql:j:{jid}-history", json.dumps([int(when), "done"]))
        pipe.zadd("ql:t:t", {jid: when})
        pipe.zadd("ql:completed", {jid: when + i * 0.001})
    pipe.zadd("ql:tags", {"t": count})
    pipe.execute()


def complete_one(lua: Any, jid: str, now: float) -> None:
    put(lua, now, jid)
    pop(lua, now)
    assert lua("complete", now, jid, "w1", "q", "{}") == "complete"


@pytest.mark.slow
def test_expiry_by_age_is_bounded_per_complete(lua, redis_client):
    backlog = 5_000
    completed_backlog(redis_client, backlog, T0)
    later = T0 + 8 * 86400  # past the default jobs-history of 7 days
    complete_one(lua, "new0", later)
    assert redis_client.zcard("ql:completed") == backlog - SWEEP + 1
    assert not redis_client.exists("ql:j:old0") and redis_client.exists(f"ql:j:old{SWEEP}")
    assert redis_client.zscore("ql:tags", "t") == backlog - SWEEP
    for n in range(1, backlog // SWEEP):
        complete_one(lua, f"new{n}", later + n)
    news = [f"new{n}" for n in range(backlog // SWEEP)]
    assert redis_client.zrange("ql:completed", 0, -1) == news
    assert not redis_client.keys("ql:j:old*")
    assert redis_client.zcard("ql:t:t") == 0


@pytest.mark.slow
def test_expiry_by_count_is_bounded_per_complete(lua, redis_client):
    completed_backlog(redis_client, 1_000, T0)
    lua("config.set", T0, "jobs-history-count", 10)
    complete_one(lua, "new", T0 + 1)
    assert redis_client.zcard("ql:completed") == 1_001 - SWEEP
    assert redis_client.zrange("ql:completed", -1, -1) == ["new"]


@pytest.mark.slow
def test_queue_counts_do_not_release_every_due_job(lua, redis_client):
    backlog = 5_000
    put_many(lua, backlog, now=T0, delay=10)
    before = redis_client.zcard("ql:q:q-scheduled")
    counts = lua.json("queues", T0 + 20, "q")
    assert (counts["waiting"], counts["scheduled"]) == (backlog, 0)
    assert redis_client.zcard("ql:q:q-scheduled") == before - SWEEP
    assert redis_client.zcard("ql:q:q-work") == SWEEP
    assert lua.json("queues", T0 + 20)[0]["waiting"] == backlog
    assert lua("jobs", T0 + 20, "scheduled", "q") == []
    assert lua("length", T0 + 20, "q") == backlog
    assert len(pop(lua, T0 + 21, count=backlog)) == backlog


def test_counts_split_due_and_future_scheduled_jobs(lua):
    put(lua, T0, "soon", delay=5)
    put(lua, T0, "later", delay=500)
    counts = lua.json("queues", T0 + 10, "q")
    assert (counts["waiting"], counts["scheduled"]) == (1, 1)
    assert lua("jobs", T0 + 10, "scheduled", "q") == ["later"]
    assert get(lua, "soon")["state"] == "waiting"


# --- lenient options, validation order ------------------------------------------------------


def test_put_and_requeue_ignore_unknown_options(lua):
    assert put(lua, T0, "a", priority=3, throttles='["x"]') == "a"
    assert get(lua, "a")["priority"] == 3
    assert put(lua, T0, "a", command="requeue", bogus=1, retries=2) == "a"
    assert get(lua, "a")["retries"] == 2


def test_complete_ignores_unknown_options(lua):
    put(lua, T0, "a")
    pop(lua, T0)
    assert lua("complete", T0, "a", "w1", "q", "{}", "next", "q2", "bogus", 1) == "waiting"
    assert get(lua, "a")["queue"] == "q2"


def test_known_option_values_are_still_checked(lua, keyspace):
    message = unchanged(keyspace, lambda: put(lua, T0, "a", bogus=1, retries="many"))
    assert message == 'Put(): Arg "retries" not a number: many'
    message = unchanged(keyspace, lambda: lua("put", T0, "c", "q", "a", "K", "{}", 0, "priority"))
    assert message == "Odd number of additional args: priority"


def test_timeout_checks_every_jid_before_changing_any(lua, keyspace):
    put(lua, T0, "a")
    put(lua, T0 + 1, "b")
    assert [job["jid"] for job in pop(lua, T0 + 1)] == ["a"]
    message = unchanged(keyspace, lambda: lua("timeout", T0 + 2, "a", "b"))
    assert message == "Timeout(): Job b not running"


# --- qless-py 0.11's put without a worker argument -------------------------------------------


def test_legacy_put_without_worker(lua, events):
    assert lua("put", T0, "q", "a", "K", '{"x": 1}', 0) == "a"
    assert lua("put", T0, "q", "b", "K", "{}", 5, "priority", 2, "tags", '["t"]') == "b"
    assert (get(lua, "a")["state"], get(lua, "b")["state"]) == ("waiting", "scheduled")
    assert get(lua, "b")["tags"] == ["t"]
    pop(lua, T0, worker="w1")
    events.clear()
    lua("put", T0 + 1, "q", "a", "K", "{}", 0)
    assert {"jid": "a", "event": "lock_lost", "worker": "w1"} in [
        json.loads(payload) for payload in events.on("ql:w:w1")
    ]


def test_odd_new_style_calls_keep_their_errors(lua):
    new_style = ("w", "q", "a", "K", "{}")
    expect_error(lua, r'Put\(\): Arg "delay" not a number: nil', "put", T0, *new_style)
    expect_error(lua, "Odd number of additional args: tags", "put", T0, *new_style, 0, "tags")


# --- edge values that used to fail half-way ---------------------------------------------------


def test_huge_counts_are_clamped_not_sent_as_1e18(lua):
    put(lua, T0, "a")
    put(lua, T0 + 1, "b")
    assert [job["jid"] for job in json.loads(lua("peek", T0 + 2, "q", "1e18"))] == ["a", "b"]
    assert lua("jobs", T0 + 2, "complete", 0, "1e18") == []
    assert lua.json("tag", T0 + 2, "get", "t", "1e18", "1e18") == {"total": 0, "jobs": {}}
    assert [job["jid"] for job in pop(lua, T0 + 2, count="1e18")] == ["a", "b"]


def test_numeric_dependency_ids_are_jids(lua, keyspace):
    put(lua, T0, "1")
    call = ("put", T0, "c", "q", "1", "K", "{}", 0, "depends", "[1]")
    message = unchanged(keyspace, lambda: lua(*call))
    assert message == "Put(): Job 1 cannot depend on itself"
    assert put(lua, T0, "2", depends=[1]) == "2"
    assert get(lua, "2")["dependencies"] == ["1"]


def test_timeout_of_a_jid_listed_twice_times_it_out_once(lua, redis_client, events):
    put(lua, T0, "a")
    pop(lua, T0)
    events.clear()
    assert lua("timeout", T0 + 1, "a", "a") is None
    whats = [entry[1] for entry in history_entries(redis_client, "a")]
    assert whats == ["put", "popped", "timed-out"]
    assert len(events.on("ql:w:w1")) == 1


def history_entries(redis_client: redis.Redis, jid: str) -> list[list[Any]]:
    """The decoded raw history list of a job."""
    return [json.loads(item) for item in redis_client.lrange(f"ql:j:{jid}-history", 0, -1)]


def test_fractional_retries_are_refused_up_front(lua, keyspace):
    message = unchanged(keyspace, lambda: put(lua, T0, "a", retries=2.5))
    assert message == 'Put(): Arg "retries" not a number: 2.5'
    recur = ("recur", T0, "q", "r", "K", "{}", "interval", 60, 0, "retries", "1.5")
    message = unchanged(keyspace, lambda: lua(*recur))
    assert message == 'Recur(): Arg "retries" not a number: 1.5'


# --- jobs written by old qless-core builds ---------------------------------------------------


def test_legacy_history_blob_is_shown_then_migrated(lua, redis_client):
    put(lua, T0, "a")
    redis_client.delete("ql:j:a-history")
    blob = [{"q": "q", "put": T0 - 10.5, "popped": T0 - 5, "worker": "w0", "done": T0 - 1}]
    redis_client.hset("ql:j:a", "history", json.dumps(blob))
    shown = [(entry["what"], entry["when"]) for entry in get(lua, "a")["history"]]
    assert shown == [("put", T0 - 11), ("popped", T0 - 5), ("done", T0 - 1)]
    assert redis_client.hexists("ql:j:a", "history")  # get only reads
    lua("log", T0, "a", "note")
    assert not redis_client.hexists("ql:j:a", "history")
    whats = [entry[1] for entry in history_entries(redis_client, "a")]
    assert whats == ["put", "popped", "done", "note"]
    assert history_entries(redis_client, "a")[1] == [T0 - 5, "popped", {"worker": "w0"}]


# --- every path loads the modules it uses (no fallback loads them on a miss) ------------------


def test_every_path_loads_the_modules_it_uses(redis_client):
    """Each call runs paths that load a module on demand; a missing load_module would raise."""
    source = SCRIPT_PATH.read_text(encoding="utf-8")
    assert "__index" not in source
    script = redis_client.register_script(source)

    def call(*args: Any) -> Any:
        return script(keys=[], args=list(args))

    def legacy(jid: str) -> None:
        """Give the job an old-style history blob, which the next history write migrates."""
        redis_client.hset(f"ql:j:{jid}", "history", json.dumps([{"q": "q", "put": T0 - 9}]))

    t = T0
    call("config.set", t, "grace-period", 0)
    call("put", t, "w", "q", "a", "K", "{}", 0, "tags", '["x"]', "retries", 0)
    call("put", t, "w", "q", "b", "K", "{}", 5, "depends", '["a"]')
    call("recur", t, "q", "r", "K", "{}", "interval", 60, 0, "tags", '["y"]')
    call("pop", t + 10, "q", "w1", 5)
    call("pop", t + 100, "q", "w2", 5)  # lock expiry: exhaustion of `a`, retry of r-1
    call("put", t + 101, "w", "q", "a", "K", "{}", 0)  # re-put of a failed job
    call("put", t + 101, "w", "other", "x", "K", "{}", 0)
    jobs = json.loads(call("pop", t + 102, "q", "w3", 5))
    assert jobs
    for job in jobs:
        call("complete", t + 103, job["jid"], "w3", "q", "{}", "next", "q2", "depends", '["x"]')
    call("put", t + 104, "w", "solo", "c", "K", "{}", 0)
    legacy("c")
    call("get", t + 104, "c")
    call("pop", t + 105, "solo", "w4", 1)
    legacy("c")
    call("fail", t + 106, "c", "w4", "g", "m")
    legacy("c")
    call("unfail", t + 107, "solo", "g")
    call("pop", t + 108, "solo", "w5", 1)
    call("retry", t + 109, "c", "solo", "w5", 0, "g", "m")
    call("pop", t + 110, "solo", "w5", 1)
    legacy("c")
    call("log", t + 110, "c", "note")
    legacy("c")
    call("timeout", t + 110, "c")
    call("pop", t + 110, "solo", "w5", 1)
    legacy("c")
    call("complete", t + 110, "c", "w5", "solo", "{}")
    call("put", t + 110, "w", "solo", "d", "K", "{}", 0, "retries", 0)
    call("pop", t + 111, "solo", "w6", 1)
    legacy("d")
    call("retry", t + 112, "d", "solo", "w6")  # exhausted by retry
    legacy("d")
    call("put", t + 112, "w", "solo", "d", "K", "{}", 0)
    call("depends", t + 113, "b", "off", "all")
    for command in ("queues", "workers", "failed", "track", "config.get"):
        call(command, t + 114)
    call("jobs", t + 114, "scheduled", "q")
    call("tag", t + 114, "top")
    call("stats", t + 114, "q", t)
    call("cancel", t + 115, "a", "b", "c", "d")
    call("config.set", t, "jobs-history", 0)
    call("put", t + 116, "w", "solo", "e", "K", "{}", 0, "tags", '["z"]')
    call("pop", t + 117, "solo", "w7", 1)
    assert call("complete", t + 118, "e", "w7", "solo", "{}") == "complete"  # expires tagged jobs


def test_untrack_clears_a_tracked_jid_whose_job_is_gone(lua, redis_client, events, keyspace):
    put(lua, T0, "a")
    assert lua("track", T0, "track", "a") == "1"
    lua("cancel", T0 + 1, "a")
    assert lua.json("track", T0 + 2) == {"jobs": {}, "expired": ["a"]}
    events.clear()
    assert lua("track", T0 + 3, "untrack", "a") == "1"
    assert events.on("ql:untrack") == ["a"]
    assert lua.json("track", T0 + 4) == {"jobs": {}, "expired": {}}
    assert not redis_client.exists("ql:tracked")
    for action in ("untrack", "track"):
        message = unchanged(keyspace, lambda action=action: lua("track", T0 + 5, action, "a"))
        assert message == "Track(): Job does not exist"


def test_dependency_lists_come_sorted(lua, keyspace):
    for jid in ("b", "a", "d", "c"):
        put(lua, T0, jid)
    put(lua, T0, "x", depends=["d", "b", "c"])
    lua("depends", T0, "x", "on", "a")
    assert get(lua, "x")["dependencies"] == ["a", "b", "c", "d"]
    for jid in ("z", "y"):
        put(lua, T0, jid, depends=["a"])
    assert get(lua, "a")["dependents"] == ["x", "y", "z"]
    message = unchanged(keyspace, lambda: lua("cancel", T0, "a"))
    assert message == "Cancel(): a is a dependency of x but is not mentioned to be canceled"


def test_exhausted_retry_counts_in_the_queue_argument(lua, redis_client):
    put(lua, T0, "j", queue="qa", retries=0)
    pop(lua, T0, queue="qa")
    assert lua("retry", T0, "j", "qb", "w1") == -1
    day = T0 - T0 % 86400
    assert redis_client.hgetall(f"ql:s:stats:{day}:qb") == {"failures": "1", "failed": "1"}
    assert not redis_client.exists(f"ql:s:stats:{day}:qa")
    assert get(lua, "j")["failure"]["group"] == "failed-retries-qb"


# --- pop builds its reply from values in hand: the same bytes as `get` ------------------------


def popped_text(lua: Any, now: float, queue: str = "q", worker: str = "w1") -> str:
    """The raw JSON text of the one job object a pop of 1 replies with."""
    reply = lua("pop", now, queue, worker, 1)
    assert reply.startswith("[{") and reply.endswith("}]")
    return str(reply[1:-1])


def test_pop_reply_is_byte_identical_to_get(lua, redis_client):
    put(lua, T0, "plain")
    assert popped_text(lua, T0 + 1) == lua("get", T0 + 1, "plain")
    put(lua, T0, "rich", priority=3, tags=["b", "a"], retries=2)
    lua("track", T0, "track", "rich")
    lua("log", T0, "rich", "note", '{"k": [1, {"x": "y"}]}')
    put(lua, T0, "child", depends=["rich"])
    assert popped_text(lua, T0 + 2) == lua("get", T0 + 2, "rich")
    lua("retry", T0 + 3, "rich", "q", "w1", 0, "g", "m")  # history: put, log, popped, ...
    assert popped_text(lua, T0 + 4.5) == lua("get", T0 + 4.5, "rich")
    redis_client.hset("ql:j:plain", "history", json.dumps([{"q": "q", "put": T0 - 9}]))
    lua("retry", T0 + 5, "plain", "q", "w1")
    assert popped_text(lua, T0 + 6) == lua("get", T0 + 6, "plain")
