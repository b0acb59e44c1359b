"""Put-if-absent under contention, and empty identifiers refused by the script itself.

Many producers racing to put the same jids with `put.ifabsent` create each job exactly
once; every call a job already blocked writes nothing. Every command that takes a jid,
queue, worker, failure group, tag or config option refuses an empty one with the whole
keyspace unchanged (an empty klass is accepted, as qless-core accepts it).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from django_qless.core import Client, commands
from tests.conftest import LuaScript, snapshot
from tests.lua.test_malformed import EMPTY_IDENTIFIER_CASES, build_world
from tests.redis_harness import RedisServer

pytestmark = pytest.mark.faults

PRODUCERS = 8
JIDS = 200


def test_racing_producers_create_each_job_once(
    server: RedisServer, figures: dict[str, Any]
) -> None:
    created: list[str] = []
    blocked = 0
    lock = threading.Lock()
    start = threading.Barrier(PRODUCERS)

    def produce() -> None:
        nonlocal blocked
        client = Client(server.client())
        start.wait()
        for index in range(JIDS):
            data = f'{{"by": "{client.worker_name}"}}'
            outcome = client.put_if_absent(commands.put_if_absent(
                "any", client.worker_name, "q", f"slot-{index}", "K", data
            ))
            with lock:
                if outcome.created:
                    created.append(outcome.jid)
                else:
                    blocked += 1

    threads = [threading.Thread(target=produce) for _ in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    raw = server.client()
    histories = [raw.llen(f"ql:j:slot-{index}-history") for index in range(JIDS)]
    figures.update(producers=PRODUCERS, calls=PRODUCERS * JIDS, created=len(created),
                   blocked=blocked)
    assert sorted(created) == sorted(f"slot-{index}" for index in range(JIDS))
    assert blocked == (PRODUCERS - 1) * JIDS
    assert raw.zcard("ql:q:q-work") == JIDS
    assert histories == [1] * JIDS  # one put each: no job was written twice


def test_empty_identifiers_are_refused_with_nothing_written(
    server: RedisServer, figures: dict[str, Any]
) -> None:
    raw = server.client()
    lua = LuaScript(raw)
    build_world(lua)
    accepted = []
    for case in EMPTY_IDENTIFIER_CASES:
        before = snapshot(raw)
        try:
            lua(case.command, case.now, *case.args)
        except redis.ResponseError as exc:
            assert "missing or empty" in str(exc), (case.name, str(exc))
        else:
            accepted.append(case.name)
        assert snapshot(raw) == before, f"{case.name} wrote"
    figures.update(calls=len(EMPTY_IDENTIFIER_CASES), accepted=len(accepted), written=0)
    assert accepted == []
