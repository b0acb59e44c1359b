"""`Client.put_many`: bulk puts under WAIT, after a script flush, and their replies."""

from __future__ import annotations

import pytest
import redis

from django_qless.core import Client, ReplicaAck, ReplicationError, commands
from tests.redis_harness import RedisServer


def puts(client: Client, jids: list[str]) -> list[commands.Command]:
    """Plain put commands of no-argument jobs."""
    return [commands.put(client.worker_name, "q", jid, "K", "{}", 0) for jid in jids]


def test_without_a_replica_a_bulk_put_raises_and_is_written(redis_client: redis.Redis) -> None:
    acked = Client(redis_client, replica_ack=ReplicaAck(replicas=1, timeout=0.02))
    with pytest.raises(ReplicationError) as caught:
        acked.put_many(puts(acked, ["a", "b", "c"]))
    assert caught.value.command == "put.many" and caught.value.jid == "a"
    assert redis_client.zcard("ql:q:q-work") == 3


def test_with_a_replica_the_jobs_are_on_it_when_it_returns() -> None:
    primary = RedisServer(extra_args=("--repl-diskless-sync-delay", "0")).start()
    replica = RedisServer(extra_args=("--replicaof", "127.0.0.1", str(primary.port))).start()
    try:
        assert primary.client().execute_command("WAIT", 1, 5000) == 1
        acked = Client(primary.client(), replica_ack=ReplicaAck(1, 2.0))
        jids = [f"j{n}" for n in range(250)]
        assert acked.put_many(puts(acked, jids)) == jids
        assert replica.client().zcard("ql:q:q-work") == 250
    finally:
        replica.stop()
        primary.stop()


def test_a_flushed_script_is_loaded_and_every_put_made_once(redis_client: redis.Redis) -> None:
    client = Client(redis_client)
    client.put_many(puts(client, ["first"]))
    redis_client.script_flush()
    jids = [f"j{n}" for n in range(2500)]
    assert client.put_many(puts(client, jids)) == jids
    assert redis_client.zcard("ql:q:q-work") == 2501
    assert all(redis_client.llen(f"ql:j:{jid}-history") == 1 for jid in jids[::97])
