"""Recurring jobs: recur, spawning, backlog, update, tags, unrecur (protocol §1.3, §3.9)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import (
    T0,
    expect_error,
    fmt_time,
    get,
    history,
    jids,
    options,
    peek,
    pop,
    put,
)


def recur(lua, now, jid="r", queue="q", interval=60, offset=0, data='{"x": 1}', **opts):
    """Call `recur` with an interval schedule."""
    args = [queue, jid, "Klass", data, "interval", interval, offset, *options(opts)]
    return lua("recur", now, *args)


def test_recur_replies_jid_and_writes_template(lua, redis_client):
    assert recur(lua, T0, offset=30) == "r"
    fields = redis_client.hgetall("ql:r:r")
    assert fields["jid"] == "r"
    assert fields["klass"] == "Klass"
    assert fields["data"] == '{"x": 1}'
    assert fields["state"] == "recur"
    assert fields["queue"] == "q"
    assert fields["type"] == "interval"
    assert float(fields["interval"]) == 60
    assert int(fields["count"]) == 0
    assert float(fields["priority"]) == 0
    assert int(fields["retries"]) == 0
    assert int(fields["backlog"]) == 0
    assert fields["tags"] == "{}"
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 30
    assert redis_client.zscore("ql:queues", "q") == T0


def test_recur_options_are_stored(lua, redis_client):
    recur(lua, T0, priority=5, tags=["a"], retries=3, backlog=2)
    fields = redis_client.hgetall("ql:r:r")
    assert float(fields["priority"]) == 5
    assert json.loads(fields["tags"]) == ["a"]
    assert int(fields["retries"]) == 3
    assert int(fields["backlog"]) == 2


def test_recur_get_replies_template_object(lua):
    recur(lua, T0, priority=5, tags=["a"], retries=3, backlog=2)
    assert lua.json("recur.get", T0, "r") == {
        "jid": "r", "klass": "Klass", "state": "recur", "queue": "q", "priority": 5,
        "interval": 60, "retries": 3, "count": 0, "data": '{"x": 1}', "tags": ["a"],
        "backlog": 2,
    }


def test_recur_get_of_unknown_jid_is_nil(lua):
    assert lua("recur.get", T0, "nope") is None


def test_pop_spawns_a_job_when_due(lua, redis_client):
    recur(lua, T0, offset=10, priority=2, tags=["t"], retries=4)
    assert pop(lua, T0 + 9) == []
    jobs = pop(lua, T0 + 15.5, "q", "w1")
    assert jids(jobs) == ["r-1"]
    job = jobs[0]
    assert job["klass"] == "Klass"
    assert job["data"] == '{"x": 1}'
    assert job["priority"] == 2
    assert job["tags"] == ["t"]
    assert job["retries"] == 4
    assert job["spawned_from_jid"] == "r"
    assert history(redis_client, "r-1")[0] == [T0 + 10, "put", {"q": "q"}]
    assert redis_client.zscore("ql:t:t", "r-1") is not None
    assert int(redis_client.hget("ql:r:r", "count")) == 1
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 70


def test_spawned_job_time_is_the_scheduled_time(lua, redis_client):
    recur(lua, T0, offset=10)
    peek(lua, T0 + 15)
    assert redis_client.hget("ql:j:r-1", "time") == fmt_time(T0 + 10)
    assert redis_client.hget("ql:j:r-1", "state") == "waiting"
    assert redis_client.zscore("ql:q:q-work", "r-1") == pytest.approx(-(T0 + 10) / 1e10, abs=1e-12)


def test_missed_intervals_are_all_spawned_without_backlog(lua):
    recur(lua, T0)
    jobs = pop(lua, T0 + 600, "q", "w1", 20)
    assert jids(jobs) == [f"r-{n}" for n in range(1, 12)]


def test_spawning_respects_the_pop_budget(lua, redis_client):
    recur(lua, T0)
    assert jids(pop(lua, T0 + 600, "q", "w1", 3)) == ["r-1", "r-2", "r-3"]
    assert int(redis_client.hget("ql:r:r", "count")) == 3
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 180


def test_backlog_limits_spawned_jobs_after_idle(lua, redis_client):
    recur(lua, T0, backlog=2)
    jobs = pop(lua, T0 + 610, "q", "w1", 20)
    assert len(jobs) == 2
    times = sorted(history(redis_client, jid)[0][0] for jid in jids(jobs))
    assert times == [T0 + 540, T0 + 600]
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 660


def test_peek_spawns_too(lua, redis_client):
    recur(lua, T0)
    assert jids(peek(lua, T0 + 1)) == ["r-1"]
    assert redis_client.exists("ql:j:r-1")


def test_spawning_only_for_the_polled_queue(lua, redis_client):
    recur(lua, T0, queue="q")
    pop(lua, T0 + 100, "elsewhere", "w1")
    assert not redis_client.exists("ql:j:r-1")


def test_recur_again_keeps_count_and_moves_queue(lua, redis_client):
    recur(lua, T0)
    pop(lua, T0, "q", "w1")
    recur(lua, T0 + 5, queue="q2")
    assert int(redis_client.hget("ql:r:r", "count")) == 1
    assert redis_client.zscore("ql:q:q-recur", "r") is None
    assert redis_client.zscore("ql:q:q2-recur", "r") == T0 + 5


def test_recur_update_fields(lua, redis_client):
    recur(lua, T0)
    args = ["priority", 7, "retries", 9, "data", '{"y": 2}', "klass", "K2", "backlog", 4]
    assert lua("recur.update", T0, "r", *args) == 1
    fields = redis_client.hgetall("ql:r:r")
    assert float(fields["priority"]) == 7
    assert int(fields["retries"]) == 9
    assert fields["data"] == '{"y": 2}'
    assert fields["klass"] == "K2"
    assert int(fields["backlog"]) == 4


def test_recur_update_interval_shifts_next_run(lua, redis_client):
    recur(lua, T0, offset=60)
    lua("recur.update", T0, "r", "interval", 100)
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 100
    assert float(redis_client.hget("ql:r:r", "interval")) == 100


def test_recur_update_queue_moves_template(lua, redis_client):
    recur(lua, T0, offset=60)
    lua("recur.update", T0, "r", "queue", "q2")
    assert redis_client.zscore("ql:q:q-recur", "r") is None
    assert redis_client.zscore("ql:q:q2-recur", "r") == T0 + 60
    assert redis_client.hget("ql:r:r", "queue") == "q2"


def test_unrecur_deletes_template_and_keeps_spawned_jobs(lua, redis_client):
    recur(lua, T0)
    peek(lua, T0)
    assert lua("unrecur", T0, "r") == 1
    assert not redis_client.exists("ql:r:r")
    assert redis_client.zscore("ql:q:q-recur", "r") is None
    assert redis_client.exists("ql:j:r-1")
    assert lua("unrecur", T0, "never") == 1


def test_recur_tag_and_untag(lua, redis_client):
    recur(lua, T0, tags=["a"])
    assert json.loads(lua("recur.tag", T0, "r", "b", "c")) == ["a", "b", "c"]
    assert json.loads(lua("recur.untag", T0, "r", "a", "c")) == ["b"]
    assert json.loads(redis_client.hget("ql:r:r", "tags")) == ["b"]


def test_recurring_templates_are_listed_and_counted(lua):
    recur(lua, T0, jid="r1", offset=100)
    recur(lua, T0, jid="r2", offset=100)
    assert sorted(lua("jobs", T0, "recurring", "q")) == ["r1", "r2"]
    assert lua.json("queues", T0, "q")["recurring"] == 2


def test_template_and_job_may_share_a_jid(lua, redis_client):
    recur(lua, T0, jid="same", offset=100)
    put(lua, T0, "same")
    assert redis_client.hget("ql:r:same", "state") == "recur"
    assert get(lua, "same")["state"] == "waiting"


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["q"], r'RecurringJob On\(\): Arg "jid" missing'),
        (["q", "r"], r'RecurringJob On\(\): Arg "klass" missing'),
        (["q", "r", "K", "{}"], r'RecurringJob On\(\): Arg "spec" missing'),
        (["q", "r", "K", "{}", "interval", "x", 0], r'Recur\(\): Arg "interval" not a number.*'),
        (["q", "r", "K", "{}", "interval", 60, "x"], r'Recur\(\): Arg "offset" not a number.*'),
        (
            ["q", "r", "K", "{}", "interval", 0, 0],
            r'Recur\(\): Arg "interval" must be greater than 0',
        ),
        (["q", "r", "K", "{}", "cron", 60, 0], r'Recur\(\): schedule type "cron" unknown'),
    ],
)
def test_recur_validation(lua, args, pattern):
    expect_error(lua, pattern, "recur", T0, *args)


def test_recur_update_unknown_jid(lua):
    pattern = r"Recur\(\): No recurring job nope"
    expect_error(lua, pattern, "recur.update", T0, "nope", "priority", 1)


def test_recur_update_unrecognized_option(lua):
    recur(lua, T0)
    pattern = r'Recur\(\): Unrecognized option "bogus"'
    expect_error(lua, pattern, "recur.update", T0, "r", "bogus", 1)


def test_recur_update_missing_value(lua):
    recur(lua, T0)
    pattern = r"(\w+\(\): )?No value provided for priority"
    expect_error(lua, pattern, "recur.update", T0, "r", "priority")


def test_spawning_starts_from_the_floored_next_time(lua, redis_client):
    recur(lua, T0 + 0.5)
    peek(lua, T0 + 61)
    assert redis_client.hget("ql:j:r-1", "time") == fmt_time(T0)
    assert redis_client.hget("ql:j:r-2", "time") == fmt_time(T0 + 60)
    assert redis_client.zscore("ql:q:q-recur", "r") == T0 + 120


def test_wait_of_a_spawned_job_counts_from_its_scheduled_time(lua, redis_client):
    recur(lua, T0, offset=10)
    pop(lua, T0 + 15.5, "q", "w1")
    day = T0 - T0 % 86400
    assert int(redis_client.hget(f"ql:s:wait:{day}:q", "s5")) == 1
