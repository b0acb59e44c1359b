"""EventListener on the plain channels and a worker's own channel."""

from __future__ import annotations

import time

import pytest

from django_qless.core import Client, Event, EventListener
from tests.redis_harness import RedisServer
from tests.support import FakeClock


@pytest.fixture
def listener(client: Client) -> EventListener:
    """A listener on the plain channels and worker-1's channel."""
    with client.events(worker="worker-1") as subscribed:
        yield subscribed  # type: ignore[misc]


def test_parse_json_and_plain_payloads() -> None:
    log = Event.parse("ql:log", '{"jid":"j","event":"put","queue":"q"}')
    assert (log.jid, log.kind) == ("j", "put")
    assert log.payload == {"jid": "j", "event": "put", "queue": "q"}
    plain = Event.parse("ql:popped", "j")
    assert (plain.jid, plain.kind, plain.payload) == ("j", "popped", None)
    config = Event.parse("ql:log", '{"event":"config_set","option":"heartbeat","value":30}')
    assert (config.jid, config.kind) == (None, "config_set")
    garbage = Event.parse("ql:log", "{not json")
    assert (garbage.jid, garbage.payload) == ("{not json", None)


def test_put_is_seen_on_the_log_channel(client: Client, listener: EventListener) -> None:
    client.queue("q").put("k", {}, jid="j")
    event = listener.get(timeout=2)
    assert event == Event("ql:log", "j", {"jid": "j", "event": "put", "queue": "q"})


def test_get_times_out_with_none(listener: EventListener) -> None:
    started = time.monotonic()
    assert listener.get(timeout=0.1) is None
    assert time.monotonic() - started < 1


def test_listen_yields_until_quiet(client: Client, listener: EventListener) -> None:
    client.queue("q").put("k", {}, jid="a")
    client.queue("q").put("k", {}, jid="b")
    assert [(e.jid, e.kind) for e in listener.listen(timeout=0.3)] == [("a", "put"), ("b", "put")]


def test_lock_lost_reaches_the_workers_channel(
    client: Client, listener: EventListener
) -> None:
    client.queue("q").put("k", {}, jid="j")
    client.queue("q").pop()
    client.timeout("j")
    events = list(listener.listen(timeout=0.3))
    mine = [e for e in events if e.channel == "ql:w:worker-1"]
    assert [(e.jid, e.kind) for e in mine] == [("j", "lock_lost")]
    assert ("ql:log", "lock_lost") in [(e.channel, e.kind) for e in events]


def test_canceled_reaches_the_workers_channel(client: Client, listener: EventListener) -> None:
    client.queue("q").put("k", {}, jid="j")
    client.queue("q").pop()
    client.cancel("j")
    mine = [e for e in listener.listen(timeout=0.3) if e.channel == "ql:w:worker-1"]
    assert [(e.jid, e.kind) for e in mine] == [("j", "canceled")]


def test_move_by_another_client_tells_the_worker(
    client: Client, other: Client, listener: EventListener
) -> None:
    client.queue("q").put("k", {}, jid="j")
    client.queue("q").pop()
    other.get_job("j").move("elsewhere")  # type: ignore[union-attr]
    mine = [e for e in listener.listen(timeout=0.3) if e.channel == "ql:w:worker-1"]
    assert [(e.jid, e.kind) for e in mine] == [("j", "lock_lost")]


def test_tracked_job_events_on_plain_channels(
    client: Client, listener: EventListener, clock: FakeClock
) -> None:
    client.queue("q").put("k", {}, jid="j")
    client.track("j")
    (job,) = client.queue("q").pop()
    job.complete()
    plain = [(e.channel, e.jid) for e in listener.listen(timeout=0.3) if e.channel != "ql:log"]
    assert plain == [("ql:track", "j"), ("ql:popped", "j"), ("ql:completed", "j")]


def test_other_workers_channel_is_not_received(
    client: Client, other: Client, listener: EventListener
) -> None:
    other.queue("q").put("k", {}, jid="j")
    other.queue("q").pop()
    other.timeout("j")
    assert not [e for e in listener.listen(timeout=0.3) if e.channel.startswith("ql:w:")]


def test_reconnects_after_the_connection_is_killed(
    client: Client, listener: EventListener
) -> None:
    client.redis.client_kill_filter(_type="pubsub")
    deadline = time.monotonic() + 10
    seen = None
    n = 0
    # Publishes made before the resubscription are lost by pub/sub design: keep trying.
    while seen is None and time.monotonic() < deadline:
        n += 1
        client.queue("q").put("k", {}, jid=f"j{n}")
        seen = listener.get(timeout=0.2)
    assert seen is not None and seen.kind == "put"


def test_close_is_idempotent(client: Client) -> None:
    listener = client.events()
    listener.close()
    listener.close()


def test_listener_survives_a_redis_restart(clock: FakeClock) -> None:
    server = RedisServer().start()
    connection = server.client(decode_responses=True)
    client = Client(connection, clock=clock, worker_name="w")
    listener = client.events()
    listener.reconnect_delay = 0.05
    port = server.port
    restarted = None
    try:
        server.stop()
        assert listener.get(timeout=0.3) is None  # no exception while Redis is down
        assert listener.reconnects >= 1
        restarted = RedisServer(port=port).start()
        deadline = time.monotonic() + 10
        seen = None
        n = 0
        while seen is None and time.monotonic() < deadline:
            n += 1
            client.queue("q").put("k", {}, jid=f"j{n}")
            seen = listener.get(timeout=0.2)
        assert seen is not None and seen.kind == "put"
    finally:
        listener.close()
        connection.close()
        if restarted is not None:
            restarted.stop()
