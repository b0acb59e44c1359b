"""Batches of script commands: replies in order, errors in place, a clean connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.connection import Connection

from django_qless.core import Client, Command, Job, LockLostError, ScriptNotLoadedError, commands
from django_qless.core.batch import Batch, Reply, call_many, pack
from django_qless.core.script import QlessScript, library_name, script_sha
from tests.redis_harness import RedisServer
from tests.support import FakeClock, wait_for


@pytest.fixture(params=[False, True], ids=["bytes", "decoded"])
def client(request: pytest.FixtureRequest, redis_server: RedisServer,
           redis_client: redis.Redis) -> Iterator[Client]:
    """A client named `w1` on a fixed clock, with and without decode_responses."""
    connection = redis_server.client(decode_responses=request.param)
    yield Client(connection, clock=FakeClock(), worker_name="w1")
    connection.close()


def popped(client: Client, *payloads: dict[str, Any]) -> Job:
    """Put jobs into `q` and pop the first one as `w1`."""
    queue = client.queue("q")
    for rank, payload in enumerate(payloads):
        queue.put("k", payload, priority=-rank)  # pops in the order given
    [job] = queue.pop()
    return job


def complete_and_pop(job: Job) -> list[Command]:
    """The commands the worker sends after a job succeeded."""
    return [commands.complete(job.jid, "w1", "q", job.raw_data), commands.pop("q", "w1", 1)]


def cut_reads(batch: Batch, monkeypatch: pytest.MonkeyPatch) -> Connection:
    """Make every read on the kept connection fail as a lost connection; returns it."""
    kept = batch._connection
    assert kept is not None

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise redis.ConnectionError("gone")

    monkeypatch.setattr(kept, "read_response", gone)
    return kept


def in_step(client: Client) -> bool:
    """True when the pooled connection answers the next command with its own reply."""
    return client.redis.echo("in step") in ("in step", b"in step")


def test_completes_and_pops_in_one_round_trip(client: Client) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    completed, reply = call_many(client, complete_and_pop(job))
    assert completed == "complete"
    [following] = client.jobs_from_json(reply)
    assert (following.data, following.state, following.worker) == ({"n": 2}, "running", "w1")
    assert client.get_job(job.jid).state == "complete"  # type: ignore[union-attr]
    assert in_step(client)


def test_text_and_numbers_are_packed_as_redis_py_packs_them() -> None:
    script = QlessScript(redis.Redis())  # no connection is made: packing is local
    args: list[Any] = ["jid", "caf\u00e9 \u2713", b"\x00raw", 3, 2.5, -1e-7]
    expected = b"".join(Connection().pack_command(  # type: ignore[no-untyped-call]
        "FCALL", library_name(), 0, "complete", 1700000000.25, *args
    ))
    assert pack(script, 1700000000.25, [Command("complete", tuple(args))]) == expected
    # A command outside the library's set goes as EVALSHA of the script.
    assert pack(script, 1.0, [Command("a", ()), Command("pop", (1,))]) == b"".join(
        b"".join(Connection().pack_command(*words, 0, name, 1.0, *rest))  # type: ignore[no-untyped-call]
        for words, name, rest in ((("EVALSHA", script_sha()), "a", []),
                                  (("FCALL", library_name()), "pop", [1]))
    )


def test_booleans_are_refused_before_anything_is_sent(client: Client) -> None:
    job = popped(client, {})
    with pytest.raises(redis.DataError):
        call_many(client, [Command("pop", ("q", "w1", True))])
    assert client.get_job(job.jid).state == "running"  # type: ignore[union-attr]
    assert in_step(client)


def test_non_ascii_data_survives_the_round_trip(client: Client) -> None:
    job = popped(client, {"s": "caf\u00e9 \u2713"})
    completed, _ = call_many(client, complete_and_pop(job))
    assert completed == "complete"
    assert client.get_job(job.jid).data == {"s": "caf\u00e9 \u2713"}  # type: ignore[union-attr]


def test_a_script_error_is_returned_in_place_and_the_pop_still_read(client: Client) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    client.timeout(job.jid)  # the lock is gone: complete is refused
    completed, reply = call_many(client, complete_and_pop(job))
    assert isinstance(completed, LockLostError)
    assert [j.data for j in client.jobs_from_json(reply)] == [{"n": 1}]  # timed out: first again
    assert in_step(client)


def test_noscript_after_a_flush_is_script_not_loaded_and_nothing_ran(client: Client) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    client.redis.script_flush()
    client.redis.function_flush()  # the per-job commands are FCALLs of the library
    with pytest.raises(ScriptNotLoadedError):
        call_many(client, complete_and_pop(job))
    assert in_step(client)
    assert client.get_job(job.jid).state == "running"  # type: ignore[union-attr]
    assert client.queue("q").length() == 2  # nothing popped either
    assert job.complete() == "complete"  # a plain call loads the script again


def test_a_refusal_by_redis_is_raised_after_both_replies_are_read(
    client: Client, redis_client: redis.Redis, redis_server: RedisServer
) -> None:
    job = popped(client, {})
    redis_client.acl_setuser("noscripts", enabled=True, nopass=True, keys=["*"],
                             channels=["*"], commands=["+@all", "-evalsha", "-fcall"])
    limited = Client(redis_server.client(username="noscripts", password="any"),
                     clock=FakeClock(), worker_name="w1")
    try:
        # A denied FCALL did not run, as a missing library: the caller's plain call decides.
        with pytest.raises(ScriptNotLoadedError, match="permissions"):
            call_many(limited, complete_and_pop(job))
        assert in_step(limited)
    finally:
        limited.redis.close()
        redis_client.acl_deluser("noscripts")
    assert client.get_job(job.jid).state == "running"  # type: ignore[union-attr]


def test_a_timeout_mid_round_trip_drops_the_connection(
    client: Client, redis_client: redis.Redis, redis_server: RedisServer
) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    impatient = Client(redis_server.client(socket_timeout=0.05), clock=FakeClock(),
                       worker_name="w1")
    assert in_step(impatient)  # connected before the pause
    redis_client.execute_command("CLIENT", "PAUSE", 300, "ALL")
    try:
        with pytest.raises(redis.TimeoutError):
            call_many(impatient, complete_and_pop(job))
        pool = impatient.redis.connection_pool
        assert not pool._in_use_connections  # released...
        assert all(c._sock is None for c in pool._available_connections)  # ...but closed
        time.sleep(0.3)  # the pause is over
        assert in_step(impatient)  # a new connection answers
    finally:
        redis_client.execute_command("CLIENT", "UNPAUSE")
        impatient.redis.close()
    # Redis drops a closed client's paused commands; they were not sent again either.
    assert client.get_job(job.jid).state == "running"  # type: ignore[union-attr]
    assert client.queue("q").jobs("running") == [job.jid]  # and the next one is not popped


def test_an_interruption_between_two_replies_drops_the_connection(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    pool = client.redis.connection_pool
    connection = pool.get_connection()
    pool.release(connection)
    read = connection.read_response

    def read_then_interrupt(*args: Any, **kwargs: Any) -> Any:
        read(*args, **kwargs)
        raise KeyboardInterrupt  # after the first reply, outside redis-py's own handler

    monkeypatch.setattr(connection, "read_response", read_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        call_many(client, complete_and_pop(job))
    monkeypatch.undo()
    assert connection._sock is None  # the pop's reply was still owed: not reused
    assert connection in pool._available_connections
    assert in_step(client)


def test_round_trips_keep_their_connection_until_released(client: Client) -> None:
    first = popped(client, {"n": 1}, {"n": 2}, {"n": 3})
    pool = client.redis.connection_pool
    batch = Batch(client)
    _, reply = batch.call_many(complete_and_pop(first))
    kept = batch._connection
    assert kept is not None and kept in pool._in_use_connections
    [second] = client.jobs_from_json(reply)
    assert batch.call_many(complete_and_pop(second))[0] == "complete"
    assert batch._connection is kept
    batch.release()
    assert not batch.holding and kept in pool._available_connections


def test_a_kept_connection_closed_by_the_server_is_replaced(
    client: Client, redis_client: redis.Redis
) -> None:
    first = popped(client, {"n": 1}, {"n": 2}, {"n": 3})
    batch = Batch(client)
    [second] = client.jobs_from_json(batch.call_many(complete_and_pop(first))[1])
    redis_client.client_kill_filter(_type="normal", skipme=True)
    completed, reply = batch.call_many(complete_and_pop(second))
    assert completed == "complete"
    assert [j.data for j in client.jobs_from_json(reply)] == [{"n": 3}]
    batch.release()


def test_a_kept_connection_with_unread_data_is_not_reused(client: Client) -> None:
    first = popped(client, {"n": 1}, {"n": 2}, {"n": 3})
    batch = Batch(client)
    [second] = client.jobs_from_json(batch.call_many(complete_and_pop(first))[1])
    assert batch._connection is not None
    batch._connection.send_command("ECHO", "stale")  # type: ignore[no-untyped-call]
    time.sleep(0.05)  # the stale reply is in the socket
    completed, reply = batch.call_many(complete_and_pop(second))
    assert completed == "complete"
    assert [j.data for j in client.jobs_from_json(reply)] == [{"n": 3}]
    batch.release()
    assert in_step(client)


def test_an_error_gives_the_kept_connection_back_closed(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    batch = Batch(client)
    batch.call_many([commands.pop("q", "w1", 0)])
    kept = cut_reads(batch, monkeypatch)
    with pytest.raises(redis.ConnectionError):
        batch.call_many(complete_and_pop(job))
    monkeypatch.undo()
    assert not batch.holding
    assert kept._sock is None and kept in client.redis.connection_pool._available_connections


def test_sent_calls_are_answered_in_order_deferred_ones_at_collect(client: Client) -> None:
    first = popped(client, {"n": 1}, {"n": 2})
    batch = Batch(client)
    seen: list[tuple[str, Any]] = []
    batch.send(complete_and_pop(first), [
        Reply(lambda value: seen.append(("complete", value)), deferred=True),
        Reply(lambda value: seen.append(("pop", value))),
    ])
    assert batch.waiting == 2 and seen == []
    batch.read()
    assert batch.waiting == 0
    [(what, reply)] = seen  # the pop is handled as it is read, the completion waits
    assert what == "pop" and [j.data for j in client.jobs_from_json(reply)] == [{"n": 2}]
    batch.collect()
    assert seen[1] == ("complete", "complete")
    batch.release()
    assert in_step(client)


def test_reading_without_waiting_takes_only_the_replies_already_here(client: Client) -> None:
    job = popped(client, {"n": 1})
    batch = Batch(client)
    seen: list[Any] = []
    batch.send([commands.complete(job.jid, "w1", "q", job.raw_data)], [Reply(seen.append)])
    wait_for(lambda: batch.read(wait=False) or seen, what="the reply, read without waiting")
    assert seen == ["complete"] and batch.waiting == 0
    batch.release()


def test_a_refused_call_sent_ahead_gets_its_typed_error(client: Client) -> None:
    job = popped(client, {"n": 1})
    client.timeout(job.jid)
    batch = Batch(client)
    seen: list[Any] = []
    batch.send([commands.complete(job.jid, "w1", "q", job.raw_data)], [Reply(seen.append)])
    batch.release()
    [error] = seen
    assert isinstance(error, LockLostError)
    assert in_step(client)


def test_a_lost_connection_fails_every_unread_call(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = popped(client, {"n": 1}, {"n": 2})
    batch = Batch(client)
    seen: list[Any] = []
    batch.send(complete_and_pop(job), [Reply(seen.append), Reply(seen.append)])
    kept = cut_reads(batch, monkeypatch)
    with pytest.raises(redis.ConnectionError):
        batch.read()
    monkeypatch.undo()
    assert [type(error) for error in seen] == [redis.ConnectionError, redis.ConnectionError]
    assert batch.waiting == 0 and not batch.holding
    assert kept._sock is None
