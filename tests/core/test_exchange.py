"""The lean put path: a kept connection that survives kills, threads and forks."""

from __future__ import annotations

import os
import threading

import redis

from django_qless.core import Client
from tests.redis_harness import RedisServer


def put(client: Client, jid: str) -> str:
    """A put of a no-argument job."""
    return client.queue("q").put("K", {}, jid=jid)


def test_a_killed_connection_is_replaced_and_the_put_made_once(
    redis_client: redis.Redis, redis_server: RedisServer,
) -> None:
    client = Client(redis_server.client())
    assert put(client, "before") == "before"
    assert client.slot.connection is not None
    redis_client.client_kill_filter(_type="normal", skipme=True)  # every other connection
    assert put(client, "after") == "after"
    assert redis_client.llen("ql:j:after-history") == 1  # put once, not twice
    # The dead connection was dropped (that put went the ordinary way); the next one is kept.
    assert put(client, "later") == "later"
    assert client.slot.connection is not None


def test_threads_share_the_client(redis_client: redis.Redis, redis_server: RedisServer) -> None:
    client = Client(redis_server.client())
    errors: list[BaseException] = []

    def producer(n: int) -> None:
        try:
            for i in range(200):
                put(client, f"t{n}-{i}")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert redis_client.zcard("ql:q:q-work") == 1600


def test_a_forked_child_uses_a_connection_of_its_own(
    redis_client: redis.Redis, redis_server: RedisServer
) -> None:
    client = Client(redis_server.client())
    put(client, "parent-1")
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if its put came back right
        try:
            code = 0 if put(client, "child") == "child" else 1
        except BaseException:  # noqa: BLE001
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert put(client, "parent-2") == "parent-2"  # the parent's socket is still in step
    assert sorted(redis_client.zrange("ql:q:q-work", 0, -1)) == ["child", "parent-1",
                                                                 "parent-2"]
