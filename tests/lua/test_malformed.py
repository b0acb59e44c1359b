"""Malformed calls to every command raise and leave every key byte-identical (plan A2)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
import redis

from tests.lua.helpers import T0, pop, put

NOW = T0 + 10
LONG = "x" * 10240
LONG_NUMBER = "9" * 10240  # parses to inf in Lua


class Case(NamedTuple):
    """One malformed call."""

    name: str
    command: str
    now: Any
    args: tuple[Any, ...]


def case(name: str, command: str, *args: Any, now: Any = NOW) -> Case:
    """A case at the usual (valid) time."""
    return Case(name, command, now, args)


PUT = ("client", "q", "new", "K", "{}", 0)
RECUR = ("q", "r2", "K", "{}", "interval", 60, 0)
COMPLETE = ("run", "w1", "q", "{}")

# Well-formed arguments for every command, used to show that a bad `now` alone is refused.
VALID_ARGS: dict[str, tuple[Any, ...]] = {
    "get": ("wait",),
    "multiget": ("wait", "run"),
    "put": PUT,
    "requeue": ("client", "q", "wait", "K", "{}", 0),
    "pop": ("q", "w1", 1),
    "peek": ("q", 1),
    "complete": COMPLETE,
    "fail": ("run", "w1", "g", "m"),
    "retry": ("run", "q", "w1"),
    "heartbeat": ("run", "w1"),
    "cancel": ("sched",),
    "timeout": ("run",),
    "depends": ("dep", "off", "all"),
    "priority": ("wait", 3),
    "tag": ("add", "wait", "x"),
    "track": ("track", "sched"),
    "log": ("wait", "msg"),
    "jobs": ("running", "q"),
    "failed": (),
    "unfail": ("q", "g"),
    "queues": (),
    "workers": (),
    "stats": ("q", NOW),
    "length": ("q",),
    "pause": ("q",),
    "unpause": ("q",),
    "queue.forget": ("q",),
    "worker.deregister": ("w1",),
    "config.get": (),
    "config.set": ("k", "v"),
    "config.unset": ("application",),
    "recur": RECUR,
    "unrecur": ("rec",),
    "recur.get": ("rec",),
    "recur.update": ("rec", "priority", 2),
    "recur.tag": ("rec", "x"),
    "recur.untag": ("rec", "x"),
}
BAD_NOWS = ("abc", "nan", "inf", "-inf", "", "1e400", "１２３")

# An empty string where a command takes a jid, queue, worker, failure group, tag or config
# option is refused like a missing one (put's worker may be empty: qless-py 0.11 sends
# none; an empty klass is accepted, as qless-core does: tests/lua/test_empty_klass.py).
EMPTY_IDENTIFIER_CASES: list[Case] = [
    Case(f"{command}-{label}-empty", command, NOW, args)
    for command, label, args in (
        ("put", "queue", ("client", "", "new", "K", "{}", 0)),
        ("put", "jid", ("client", "q", "", "K", "{}", 0)),
        ("requeue", "queue", ("client", "", "wait", "K", "{}", 0)),
        ("requeue", "jid", ("client", "q", "", "K", "{}", 0)),
        ("pop", "queue", ("", "w1", 1)),
        ("pop", "worker", ("q", "", 1)),
        ("complete", "worker", ("run", "", "q", "{}")),
        ("complete", "next", ("run", "w1", "q", "{}", "next", "")),
        ("fail", "group", ("run", "w1", "", "m")),
        ("fail", "worker", ("run", "", "g", "m")),
        ("retry", "queue", ("run", "", "w1")),
        ("retry", "group", ("run", "q", "w1", 0, "", "m")),
        ("heartbeat", "worker", ("run", "")),
        ("cancel", "jid", ("",)),
        ("cancel", "second-jid", ("sched", "")),
        ("depends", "jid", ("", "on", "wait")),
        ("priority", "jid", ("", 3)),
        ("tag", "tag", ("add", "wait", "ok", "")),
        ("track", "jid", ("track", "")),
        ("log", "jid", ("", "msg")),
        ("unfail", "queue", ("", "g")),
        ("unfail", "group", ("q", "")),
        ("pause", "queue", ("q", "")),
        ("unpause", "queue", ("",)),
        ("queue.forget", "queue", ("",)),
        ("worker.deregister", "worker", ("",)),
        ("config.set", "option", ("", "v")),
        ("config.unset", "option", ("",)),
        ("recur", "queue", ("", "r2", "K", "{}", "interval", 60, 0)),
        ("recur", "jid", ("q", "", "K", "{}", "interval", 60, 0)),
        ("recur.update", "queue", ("rec", "queue", "")),
        ("recur.tag", "jid", ("", "x")),
    )
]

CASES: list[Case] = [
    # Every command refuses a `now` that is not a finite number.
    *(
        Case(f"{command}-now-{index}", command, BAD_NOWS[index % len(BAD_NOWS)], args)
        for index, (command, args) in enumerate(VALID_ARGS.items())
    ),
    *(Case(f"put-now-{bad!r}", "put", bad, PUT) for bad in BAD_NOWS),
    *(Case(f"heartbeat-now-{bad!r}", "heartbeat", bad, ("run", "w1")) for bad in BAD_NOWS),
    *(Case(f"pop-now-{bad!r}", "pop", bad, ("q", "w1", 5)) for bad in ("nan", "inf")),
    case("dispatch-unknown", "bogus", "x"),
    case("dispatch-unicode-command", "pöp", "q", "w1", 1),
    # put / requeue
    case("put-jid-missing", "put", "client", "q"),
    case("put-klass-missing", "put", "client", "q", "new"),
    case("put-data-missing", "put", "client", "q", "new", "K"),
    case("put-data-not-json", "put", "client", "q", "new", "K", "{bad", 0),
    case("put-data-empty", "put", "client", "q", "new", "K", "", 0),
    case("put-data-10kb", "put", "client", "q", "new", "K", LONG, 0),
    case("put-data-unicode-bad", "put", "client", "q", "new", "K", '{"ü": }', 0),
    case("put-delay-missing", "put", "client", "q", "new", "K", "{}"),
    case("put-delay-string", "put", "client", "q", "new", "K", "{}", "soon"),
    case("put-delay-nan", "put", "client", "q", "new", "K", "{}", "nan"),
    case("put-priority-string", "put", *PUT, "priority", "high"),
    case("put-priority-nan", "put", *PUT, "priority", "nan"),
    case("put-priority-10kb", "put", *PUT, "priority", LONG_NUMBER),
    case("put-priority-unicode", "put", *PUT, "priority", "５"),
    case("put-retries-string", "put", *PUT, "retries", "many"),
    case("put-tags-not-json", "put", *PUT, "tags", "{bad"),
    case("put-depends-not-json", "put", *PUT, "depends", "[bad"),
    case("put-odd-options", "put", *PUT, "priority"),
    case("put-odd-options-3", "put", *PUT, "priority", 1, "tags"),
    case("requeue-data-not-json", "requeue", "client", "q", "wait", "K", "{bad", 0),
    case("requeue-delay-string", "requeue", "client", "q", "wait", "K", "{}", "x"),
    # pop / peek
    case("pop-worker-missing", "pop", "q"),
    case("pop-count-missing", "pop", "q", "w1"),
    case("pop-count-string", "pop", "q", "w1", "many"),
    case("pop-count-nan", "pop", "q", "w1", "nan"),
    case("peek-count-missing", "peek", "q"),
    case("peek-count-string", "peek", "q", "some"),
    # complete
    case("complete-worker-missing", "complete", "run"),
    case("complete-queue-missing", "complete", "run", "w1"),
    case("complete-data-missing", "complete", "run", "w1", "q"),
    case("complete-data-not-json", "complete", "run", "w1", "q", "{bad"),
    case("complete-odd-options", "complete", *COMPLETE, "next"),
    case("complete-delay-without-next", "complete", *COMPLETE, "delay", 5),
    case("complete-depends-without-next", "complete", *COMPLETE, "depends", '["wait"]'),
    case("complete-delay-string", "complete", *COMPLETE, "next", "q2", "delay", "x"),
    case("complete-depends-not-json", "complete", *COMPLETE, "next", "q2", "depends", "[bad"),
    # fail / retry / heartbeat
    case("fail-worker-missing", "fail", "run"),
    case("fail-group-missing", "fail", "run", "w1"),
    case("fail-message-missing", "fail", "run", "w1", "g"),
    case("fail-data-not-json", "fail", "run", "w1", "g", "m", "{bad"),
    case("retry-queue-missing", "retry", "run"),
    case("retry-worker-missing", "retry", "run", "q"),
    case("retry-delay-string", "retry", "run", "q", "w1", "later"),
    case("heartbeat-worker-missing", "heartbeat", "run"),
    case("heartbeat-data-not-json", "heartbeat", "run", "w1", "{bad"),
    case("heartbeat-data-10kb", "heartbeat", "run", "w1", LONG),
    # depends / priority
    case("depends-command-missing", "depends", "dep"),
    case("depends-command-unknown", "depends", "dep", "sideways", "wait"),
    case("priority-missing", "priority", "wait"),
    case("priority-string", "priority", "wait", "urgent"),
    case("priority-nan", "priority", "wait", "nan"),
    # tag / track / log
    case("tag-command-missing", "tag"),
    case("tag-command-unknown", "tag", "bogus", "wait", "x"),
    case("tag-add-jid-missing", "tag", "add"),
    case("tag-get-tag-missing", "tag", "get"),
    case("tag-get-offset-string", "tag", "get", "t1", "first"),
    case("tag-get-count-string", "tag", "get", "t1", 0, "all"),
    case("tag-top-offset-string", "tag", "top", "first"),
    case("tag-top-count-string", "tag", "top", 0, "all"),
    case("track-action-unknown", "track", "follow", "wait"),
    case("track-jid-missing", "track", "track"),
    case("log-jid-missing", "log"),
    case("log-message-missing", "log", "wait"),
    case("log-data-not-json", "log", "wait", "msg", "{bad"),
    # jobs / failed / unfail / stats
    case("jobs-state-missing", "jobs"),
    case("jobs-type-unknown", "jobs", "bogus", "q"),
    case("jobs-queue-missing", "jobs", "running"),
    case("jobs-offset-string", "jobs", "running", "q", "x"),
    case("jobs-count-string", "jobs", "running", "q", 0, "y"),
    case("jobs-complete-offset-string", "jobs", "complete", "x"),
    case("jobs-complete-count-string", "jobs", "complete", 0, "y"),
    case("failed-start-string", "failed", "g", "x"),
    case("failed-limit-string", "failed", "g", 0, "y"),
    case("unfail-group-missing", "unfail", "q"),
    case("unfail-count-string", "unfail", "q", "g", "all"),
    case("stats-date-missing", "stats", "q"),
    case("stats-date-string", "stats", "q", "yesterday"),
    # config
    case("config-set-option-missing", "config.set"),
    case("config-set-value-missing", "config.set", "heartbeat"),
    case("config-set-heartbeat-not-a-number", "config.set", "heartbeat", "abc"),
    # recur
    case("recur-jid-missing", "recur", "q"),
    case("recur-klass-missing", "recur", "q", "r2"),
    case("recur-spec-missing", "recur", "q", "r2", "K", "{}"),
    case("recur-interval-string", "recur", "q", "r2", "K", "{}", "interval", "x", 0),
    case("recur-offset-string", "recur", "q", "r2", "K", "{}", "interval", 60, "x"),
    case("recur-interval-zero", "recur", "q", "r2", "K", "{}", "interval", 0, 0),
    case("recur-interval-negative", "recur", "q", "r2", "K", "{}", "interval", -5, 0),
    case("recur-spec-unknown", "recur", "q", "r2", "K", "{}", "cron", 60, 0),
    case("recur-data-not-json", "recur", "q", "r2", "K", "{bad", "interval", 60, 0),
    case("recur-priority-string", "recur", *RECUR, "priority", "abc"),
    case("recur-retries-string", "recur", *RECUR, "retries", "abc"),
    case("recur-backlog-string", "recur", *RECUR, "backlog", "abc"),
    case("recur-tags-not-json", "recur", *RECUR, "tags", "[bad"),
    case("recur-odd-options", "recur", *RECUR, "priority"),
    case("recur-unknown-option", "recur", *RECUR, "bogus", 1),
    case("recur-update-unknown-key", "recur.update", "rec", "bogus", 1),
    case("recur-update-value-missing", "recur.update", "rec", "priority"),
    case("recur-update-priority-string", "recur.update", "rec", "priority", "abc"),
    case("recur-update-interval-string", "recur.update", "rec", "interval", "abc"),
    case("recur-update-interval-zero", "recur.update", "rec", "interval", 0),
    case("recur-update-retries-string", "recur.update", "rec", "retries", "abc"),
    case("recur-update-backlog-string", "recur.update", "rec", "backlog", "abc"),
    case("recur-update-data-not-json", "recur.update", "rec", "data", "{bad"),
    # put.ifabsent (extension): its own policy argument, then put's checks
    case("put-ifabsent-policy-missing", "put.ifabsent"),
    case("put-ifabsent-policy-unknown", "put.ifabsent", "sometimes", *PUT),
    case("put-ifabsent-data-not-json", "put.ifabsent", "any", "client", "q", "new", "K", "{x", 0),
    case("put-ifabsent-jid-empty", "put.ifabsent", "any", "client", "q", "", "K", "{}", 0),
    case("put-ifabsent-existing-bad-delay", "put.ifabsent", "any", "client", "q", "wait", "K",
         "{}", "soon"),
    # pop.first (extension): every argument checked before the first queue is popped
    case("pop-first-worker-missing", "pop.first"),
    case("pop-first-worker-empty", "pop.first", "", 1, "q"),
    case("pop-first-count-missing", "pop.first", "w1"),
    case("pop-first-count-string", "pop.first", "w1", "many", "q"),
    case("pop-first-no-queue", "pop.first", "w1", 1),
    case("pop-first-later-queue-empty", "pop.first", "w1", 1, "q", ""),
    # complete.pop (extension): the pop's arguments checked before the completion writes
    case("complete-pop-count-missing", "complete.pop", *COMPLETE),
    case("complete-pop-count-string", "complete.pop", *COMPLETE, "many", "q"),
    case("complete-pop-no-queue", "complete.pop", *COMPLETE, 1),
    case("complete-pop-later-queue-empty", "complete.pop", *COMPLETE, 1, "q", ""),
    case("complete-pop-worker-empty", "complete.pop", "run", "", "q", "{}", 1, "q"),
    case("complete-pop-data-not-json", "complete.pop", "run", "w1", "q", "{bad", 1, "q"),
    # put.many (extension): every group parsed before the first put is written
    case("put-many-count-missing", "put.many", "client"),
    case("put-many-count-too-long", "put.many", 7, *PUT),
    case("put-many-later-count-bad", "put.many", 6, *PUT, 0, *PUT),
    case("put-many-later-data-not-json", "put.many", 6, *PUT, 6, "client", "q", "n2", "K",
         "{x", 0),
    case("put-many-later-jid-empty", "put.many", 6, *PUT, 6, "client", "q", "", "K", "{}", 0),
    case("put-many-depends", "put.many", 6, *PUT, 8, "client", "q", "n2", "K", "{}", 0,
         "depends", '["wait"]'),
    *EMPTY_IDENTIFIER_CASES,
]


def build_world(lua: Any) -> None:
    """Jobs in every state, a recurring template, config, failures, tags and tracking."""
    lua("config.set", T0, "heartbeat", 3600)
    lua("config.set", T0, "application", "shop")
    put(lua, T0, "run", "q", tags=["t1"])
    put(lua, T0, "stall", "q")
    pop(lua, T0, "q", "w1", 2)
    lua("timeout", T0, "stall")
    put(lua, T0, "wait", "q", priority=5, tags=["t1", "t2"])
    put(lua, T0, "sched", "q", delay=600)
    put(lua, T0, "dep", "q", depends=["wait"])
    put(lua, T0, "failed", "q2", tags=["t2"])
    put(lua, T0, "done", "q3")
    pop(lua, T0, "q2", "w2")
    pop(lua, T0, "q3", "w2")
    lua("fail", T0, "failed", "w2", "g", "boom")
    lua("complete", T0, "done", "w2", "q3", "{}")
    lua("recur", T0, "rq", "rec", "K", "{}", "interval", 3600, 7200, "tags", '["t1"]')
    lua("track", T0, "track", "wait")
    lua("track", T0, "track", "run")
    lua("pause", T0, "paused")


def test_every_command_has_malformed_cases():
    covered = {item.command for item in CASES}
    assert set(VALID_ARGS) <= covered


def test_world_is_what_the_cases_assume(lua, redis_client):
    build_world(lua)
    states = {jid: redis_client.hget(f"ql:j:{jid}", "state") for jid in
              ("run", "stall", "wait", "sched", "dep", "failed", "done")}
    assert states == {
        "run": "running", "stall": "stalled", "wait": "waiting", "sched": "scheduled",
        "dep": "depends", "failed": "failed", "done": "complete",
    }
    keys = list(redis_client.scan_iter(count=1000))
    assert all(key.startswith("ql:") for key in keys), keys
    assert {key: redis_client.ttl(key) for key in keys if redis_client.ttl(key) != -1} == {}


@pytest.mark.parametrize("item", CASES, ids=[item.name for item in CASES])
def test_malformed_call_is_refused_and_writes_nothing(lua, keyspace, item):
    build_world(lua)
    before = keyspace()
    with pytest.raises(redis.ResponseError):
        lua(item.command, item.now, *item.args)
    after = keyspace()
    keys = before.keys() | after.keys()
    assert sorted(key for key in keys if before.get(key) != after.get(key)) == []
    put(lua, NOW, "fresh", "clean")
    assert [job["jid"] for job in pop(lua, NOW, "clean", "wc")] == ["fresh"]
    assert lua("complete", NOW, "fresh", "wc", "clean", "{}") == "complete"


# Well-formed calls that the job's state refuses: also all-or-nothing.
REFUSED: list[Case] = [
    case("requeue-unknown", "requeue", "client", "q", "nope", "K", "{}", 0),
    case("complete-other-worker", "complete", "run", "w9", "q", "{}"),
    case("complete-pop-other-worker", "complete.pop", "run", "w9", "q", "{}", 1, "q"),
    case("complete-pop-not-running", "complete.pop", "wait", "w1", "q", "{}", 1, "q"),
    case("complete-other-queue", "complete", "run", "w1", "q9", "{}"),
    case("complete-not-running", "complete", "wait", "w1", "q", "{}"),
    case("complete-next-cycle", "complete", "run", "w1", "q", "{}", "next", "q", "depends",
         '["run"]'),
    case("fail-not-running", "fail", "failed", "w2", "g", "m"),
    case("retry-other-worker", "retry", "run", "q", "w9"),
    case("heartbeat-other-worker", "heartbeat", "run", "w9"),
    case("heartbeat-not-running", "heartbeat", "stall", "w1"),
    case("cancel-lone-dependency", "cancel", "sched", "wait"),
    case("timeout-not-running", "timeout", "run", "wait"),
    case("depends-not-in-depends-state", "depends", "wait", "on", "sched"),
    case("priority-unknown", "priority", "nope", 1),
    case("tag-unknown-job", "tag", "add", "nope", "x"),
    case("track-unknown-job", "track", "track", "nope"),
    case("log-unknown-job", "log", "nope", "msg"),
    case("recur-update-unknown", "recur.update", "nope", "priority", 1),
]


@pytest.mark.parametrize("item", REFUSED, ids=[item.name for item in REFUSED])
def test_refused_call_writes_nothing(lua, keyspace, item):
    build_world(lua)
    before = keyspace()
    with pytest.raises(redis.ResponseError):
        lua(item.command, item.now, *item.args)
    after = keyspace()
    keys = before.keys() | after.keys()
    assert sorted(key for key in keys if before.get(key) != after.get(key)) == []


def test_reads_still_answer_an_empty_name_with_nothing_found(lua):
    """Only writes refuse an empty name: a UI asking for tag "" gets an empty answer."""
    build_world(lua)
    assert lua("get", NOW, "") is None
    assert lua("recur.get", NOW, "") is None
    assert lua("length", NOW, "") == 0
    assert lua("peek", NOW, "", 5) == "{}"
    assert lua("jobs", NOW, "running", "") == []
    assert '"total":0' in lua("tag", NOW, "get", "")
