"""REPLICA_ACK in the core: WAIT after puts and completions, in the same round trip."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import redis

from django_qless.core import (
    Client,
    InvalidArgumentError,
    QlessError,
    ReplicaAck,
    ReplicationError,
    commands,
)
from django_qless.core.batch import call_many
from tests.redis_harness import RedisServer

SHORT = ReplicaAck(replicas=1, timeout=0.02)


def wait_calls(connection: redis.Redis) -> int:
    """How many WAIT commands the server has run."""
    stats = connection.info("commandstats").get("cmdstat_wait", {})
    return int(stats.get("calls", 0))


@pytest.fixture(scope="module")
def replicated() -> Iterator[tuple[RedisServer, RedisServer]]:
    """A primary and one replica in sync with it."""
    # The replica's first sync starts at once, not after the default 5 s delay.
    primary = RedisServer(extra_args=("--repl-diskless-sync-delay", "0")).start()
    replica = RedisServer(extra_args=("--replicaof", "127.0.0.1", str(primary.port))).start()
    try:
        assert primary.client().execute_command("WAIT", 1, 5000) == 1
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


@pytest.mark.parametrize(("replicas", "timeout"), [
    (0, 0.5), (-1, 0.5), (True, 0.5), (1.5, 0.5), ("1", 0.5),
    (1, 0), (1, -0.1), (1, True), (1, "0.5"), (1, float("nan")), (1, 3600),
])
def test_bad_values_are_refused(replicas: object, timeout: object) -> None:
    with pytest.raises(InvalidArgumentError):
        ReplicaAck(replicas=replicas, timeout=timeout)  # type: ignore[arg-type]


def test_wait_takes_whole_milliseconds_and_never_zero() -> None:
    assert ReplicaAck(2, 0.5).timeout_ms == 500
    # WAIT n 0 blocks for ever: the shortest timeout is 1 ms.
    assert ReplicaAck(1, 0.0001).timeout_ms == 1
    assert ReplicaAck(2, 0.25).packed() == b"*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$3\r\n250\r\n"


def test_put_without_a_replica_raises_naming_the_jid_and_is_written(
    redis_client: redis.Redis, client: Client,
) -> None:
    acked = Client(redis_client, replica_ack=SHORT)
    with pytest.raises(ReplicationError) as caught:
        acked.queue("q").put("K", {}, jid="j1")
    error = caught.value
    assert isinstance(error, QlessError)
    assert (error.jid, error.command, error.acknowledged, error.replicas) == ("j1", "put", 0, 1)
    assert "j1" in str(error) and "written to the primary but not confirmed" in str(error)
    job = client.get_job("j1")
    assert job is not None and job.state == "waiting"


def test_completion_without_a_replica_is_logged_not_raised(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture,
) -> None:
    plain = Client(redis_client, worker_name="w")
    plain.queue("q").put("K", {}, jid="j1")
    plain.queue("q").put("K", {}, jid="j2")
    acked = Client(redis_client, worker_name="w", replica_ack=SHORT)
    first, second = acked.queue("q").pop(2)
    with caplog.at_level(logging.WARNING, logger="django_qless"):
        first.complete()
        second.fail("g", "boom")
    assert plain.get_job("j1").state == "complete"  # type: ignore[union-attr]
    assert plain.get_job("j2").state == "failed"  # type: ignore[union-attr]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("complete of job j1" in w and "0 of 1" in w for w in warnings), warnings
    assert any("fail of job j2" in w for w in warnings), warnings


def test_batched_completion_waits_once_after_the_pops_and_logs(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture,
) -> None:
    acked = Client(redis_client, worker_name="w", replica_ack=SHORT)
    plain = Client(redis_client, worker_name="w")
    for jid in ("j1", "j2"):
        plain.queue("q").put("K", {}, jid=jid)
    (job,) = acked.queue("q").pop()
    before = wait_calls(redis_client)
    with caplog.at_level(logging.WARNING, logger="django_qless"):
        completed, popped = call_many(acked, [
            commands.complete(job.jid, "w", "q", "{}"), commands.pop("q", "w", 1),
        ])
    assert completed == "complete" and "j2" in popped
    assert wait_calls(redis_client) == before + 1
    assert any("complete of job j1" in r.getMessage() for r in caplog.records)


def test_pops_alone_are_not_followed_by_wait(redis_client: redis.Redis) -> None:
    acked = Client(redis_client, worker_name="w", replica_ack=SHORT)
    before = wait_calls(redis_client)
    call_many(acked, [commands.pop("q", "w", 1)])
    acked.queue("q").length()
    assert wait_calls(redis_client) == before


def test_no_wait_without_the_setting(redis_client: redis.Redis) -> None:
    before = wait_calls(redis_client)
    Client(redis_client).queue("q").put("K", {}, jid="j1")
    assert wait_calls(redis_client) == before


def test_with_a_replica_the_put_is_on_the_replica_when_it_returns(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = replicated
    acked = Client(primary.client(), replica_ack=ReplicaAck(1, 2.0))
    acked.queue("q").put("K", {})  # loads the script (a NOSCRIPT round trip waits too)
    before = wait_calls(primary.client())
    for n in range(20):
        jid = acked.queue("q").put("K", {"n": n})
        assert replica.client().hget(f"ql:j:{jid}", "state") == b"waiting"
    assert wait_calls(primary.client()) == before + 20


def test_script_missing_on_the_primary_is_loaded_once(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, _ = replicated
    acked = Client(primary.client(), replica_ack=ReplicaAck(1, 2.0))
    primary.client().script_flush()
    assert acked.queue("q").put("K", {}, jid="after-flush") == "after-flush"


def test_a_refused_put_raises_the_script_error_not_replication(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, _ = replicated
    acked = Client(primary.client(), replica_ack=ReplicaAck(1, 2.0))
    with pytest.raises(QlessError) as caught:
        acked.run(commands.Command("put", ("w", "q", "bad", "K", "not json", 0)))
    assert not isinstance(caught.value, ReplicationError)


def test_a_refused_wait_counts_as_no_replica(caplog: pytest.LogCaptureFixture) -> None:
    server = RedisServer(extra_args=("--rename-command", "WAIT", "")).start()
    try:
        acked = Client(server.client(), replica_ack=ReplicaAck(1, 1.0))
        with caplog.at_level(logging.WARNING, logger="django_qless"), \
                pytest.raises(ReplicationError, match="job j1"):
            acked.queue("q").put("K", {}, jid="j1")
        assert server.client().hget("ql:j:j1", "state") == b"waiting"
        assert any("WAIT after put refused" in r.getMessage() for r in caplog.records)
    finally:
        server.stop()
