"""An empty klass is accepted by put, recur and their variants, as qless-core accepts it.

The Ruby gem puts and recurs jobs of anonymous classes with `klass ""`; a klass names no
key, so nothing unaddressable is written. Every other empty identifier stays refused.
"""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import T0, expect_error, get, peek, pop, put

RECUR = ("interval", 60, 0)


def test_put_with_an_empty_klass_reads_back_empty(lua, redis_client):
    assert put(lua, T0, "anon", klass="") == "anon"
    assert redis_client.hget("ql:j:anon", "klass") == ""
    assert get(lua, "anon")["klass"] == ""
    assert [job["klass"] for job in peek(lua, T0 + 1)] == [""]
    popped = pop(lua, T0 + 1)
    assert [(job["jid"], job["klass"], job["state"]) for job in popped] == [
        ("anon", "", "running")
    ]


def test_requeue_and_put_ifabsent_accept_an_empty_klass(lua):
    put(lua, T0, "anon")
    assert put(lua, T0 + 1, "anon", klass="", command="requeue") == "anon"
    assert get(lua, "anon")["klass"] == ""
    reply = lua("put.ifabsent", T0 + 2, "any", "client", "q", "fresh", "", "{}", 0)
    assert reply == ["fresh", "put"]
    assert get(lua, "fresh")["klass"] == ""


def test_put_many_accepts_an_empty_klass(lua):
    group = ("client", "q", "a", "", "{}", 0)
    other = ("client", "q", "b", "Named", "{}", 0)
    assert lua("put.many", T0, 6, *group, 6, *other) == ["a", "b"]
    assert (get(lua, "a")["klass"], get(lua, "b")["klass"]) == ("", "Named")


def test_recur_with_an_empty_klass_spawns_jobs_of_empty_klass(lua):
    assert lua("recur", T0, "q", "tmpl", "", '{"x": 1}', *RECUR) == "tmpl"
    template = lua.json("recur.get", T0, "tmpl")
    assert (template["jid"], template["klass"], template["queue"]) == ("tmpl", "", "q")
    spawned = pop(lua, T0 + 1)
    assert [(job["jid"], job["klass"]) for job in spawned] == [("tmpl-1", "")]


def test_recur_update_sets_an_empty_klass(lua):
    lua("recur", T0, "q", "tmpl", "Named", "{}", *RECUR)
    assert lua("recur.update", T0, "tmpl", "klass", "") == 1
    assert lua.json("recur.get", T0, "tmpl")["klass"] == ""


def test_a_missing_klass_is_still_refused(lua, keyspace):
    before = keyspace()
    expect_error(lua, r'Put\(\): Arg "klass" missing', "put", T0, "client", "q", "new")
    expect_error(lua, r'RecurringJob On\(\): Arg "klass" missing', "recur", T0, "q", "r")
    assert keyspace() == before


@pytest.mark.parametrize(
    ("pattern", "command", "args"),
    [
        (r'Put\(\): Arg "jid" missing or empty', "put", ("client", "q", "", "", "{}", 0)),
        (r'Put\(\): Arg "queue" missing or empty', "put", ("client", "", "j", "", "{}", 0)),
        (r'Requeue\(\): Arg "jid" missing or empty', "requeue",
         ("client", "q", "", "", "{}", 0)),
        (r'Put\(\): Arg "jid" missing or empty', "put.many",
         (6, "client", "q", "ok", "", "{}", 0, 6, "client", "q", "", "", "{}", 0)),
        (r'Put\(\): Arg "jid" missing or empty', "put.ifabsent",
         ("any", "client", "q", "", "", "{}", 0)),
        (r'RecurringJob On\(\): Arg "jid" missing or empty', "recur", ("q", "", "", "{}", *RECUR)),
        (r'Recur\(\): Arg "queue" missing or empty', "recur", ("", "r", "", "{}", *RECUR)),
        (r'Recur\(\): Arg "queue" missing or empty', "recur.update", ("tmpl", "queue", "")),
    ],
    ids=["put-jid", "put-queue", "requeue-jid", "put-many-jid", "put-ifabsent-jid",
         "recur-jid", "recur-queue", "recur-update-queue"],
)
def test_other_empty_identifiers_stay_refused(lua, keyspace, pattern, command, args):
    lua("recur", T0, "q", "tmpl", "Named", "{}", *RECUR)
    before = keyspace()
    expect_error(lua, pattern, command, T0, *args)
    assert keyspace() == before


def test_an_empty_klass_job_completes_and_fails_like_any_other(lua):
    put(lua, T0, "a", klass="")
    put(lua, T0, "b", klass="")
    pop(lua, T0 + 1, count=2)
    assert lua("complete", T0 + 2, "a", "w1", "q", "{}") == "complete"
    assert lua("fail", T0 + 2, "b", "w1", "q-UnknownJobError", "no klass") == "b"
    failed = json.loads(lua("failed", T0 + 3, "q-UnknownJobError"))
    assert failed["jobs"] == ["b"]
