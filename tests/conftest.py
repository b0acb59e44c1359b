"""Shared fixtures: a private redis-server, the raw script, a pub/sub recorder."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.postgres_harness import (
    PostgresCluster,
    PostgresUnavailableError,
    find_binaries,
    postgres_unavailable,
    require_driver,
)
from tests.redis_harness import RedisServer
from tests.support import FakeClock, registry_restored

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_PATH = ROOT / "django_qless" / "core" / "qless.lua"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One redis-server for the whole session, started by the suite on a free port."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """A private PostgreSQL cluster for the whole session, started on first use.

    Skipped with the reason on a machine without PostgreSQL; under CI (CI=true) that is
    a failure instead, so CI can never pass without having run the PostgreSQL tests.
    """
    try:
        require_driver()
        binaries = find_binaries()
    except PostgresUnavailableError as exc:
        postgres_unavailable(str(exc))
    cluster = PostgresCluster(binaries).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A decoded client on an empty database, flushed again after the test."""
    client = redis_server.client(decode_responses=True)
    client.flushall()
    try:
        yield client
    finally:
        client.flushall()
        client.close()


class LuaScript:
    """Calls the built qless script the way every qless client does: EVALSHA with no KEYS."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.script = client.register_script(SCRIPT_PATH.read_text(encoding="utf-8"))

    def __call__(self, command: str, now: float | str, *args: Any) -> Any:
        """Run one command with an explicit `now`; returns the raw reply."""
        return self.script(keys=[], args=[command, now, *args])

    def json(self, command: str, now: float | str, *args: Any) -> Any:
        """Run one command and decode its JSON reply."""
        reply = self(command, now, *args)
        return None if reply is None else json.loads(reply)


@pytest.fixture
def lua(redis_client: redis.Redis) -> LuaScript:
    """The raw script, called with explicit time."""
    return LuaScript(redis_client)


class EventRecorder:
    """Records every message published on the ql:* channels."""

    def __init__(self, client: redis.Redis) -> None:
        # Keep the client: once it is garbage-collected its pool closes and the
        # subscription silently disappears.
        self.client = client
        self.pubsub = client.pubsub()
        self.pubsub.psubscribe("ql:*")
        self.received: list[tuple[str, str]] = []
        # Read the acknowledgement before the test publishes anything; redis-py drops
        # subscribe confirmations while ignore_subscribe_messages is on, so switch it on after.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.1)
            if message and message["type"] == "psubscribe":
                break
        self.pubsub.ignore_subscribe_messages = True

    def drain(self, settle: float = 0.05) -> list[tuple[str, str]]:
        """Collect what has been published so far; returns (channel, payload) pairs."""
        while True:
            message = self.pubsub.get_message(timeout=settle)
            if message is None:
                break
            self.received.append((message["channel"], message["data"]))
        return list(self.received)

    def on(self, channel: str) -> list[str]:
        """Payloads received on one channel (e.g. 'ql:log')."""
        return [data for name, data in self.drain() if name == channel]

    def clear(self) -> None:
        """Forget what was recorded so far."""
        self.drain()
        self.received.clear()

    def close(self) -> None:
        """Unsubscribe."""
        self.pubsub.close()


@pytest.fixture
def events(redis_server: RedisServer, lua: LuaScript) -> Iterator[EventRecorder]:
    """A pub/sub recorder on every ql:* channel."""
    recorder = EventRecorder(redis_server.client(decode_responses=True))
    try:
        yield recorder
    finally:
        recorder.close()


def snapshot(client: redis.Redis) -> dict[str, bytes]:
    """DUMP of every key, to prove a rejected call wrote nothing."""
    return {
        key: client.execute_command("DUMP", key, NEVER_DECODE=True)
        for key in client.scan_iter(count=1000)
    }


@pytest.fixture
def keyspace(redis_client: redis.Redis) -> Any:
    """Returns a function that snapshots every key (name -> DUMP bytes)."""
    return lambda: snapshot(redis_client)


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock starting at `T0`, moved by hand."""
    return FakeClock()


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Undo the job registrations a test makes (and restore any entry it replaced)."""
    with registry_restored():
        yield
