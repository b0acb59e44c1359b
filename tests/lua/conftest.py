"""Fixtures for the raw-script tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from tests.conftest import EventRecorder, LuaScript
from tests.redis_harness import RedisServer


class AckedEventRecorder(EventRecorder):
    """An EventRecorder that returns as soon as the pattern subscription is acknowledged.

    The acknowledgement must be read with the client's ignore flag off: redis-py drops
    subscribe confirmations whenever the pubsub object was created with it on. The client
    is kept referenced: once it is garbage-collected, redis-py closes its pool and the
    subscription silently goes away.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.pubsub = client.pubsub(ignore_subscribe_messages=False)
        self.pubsub.psubscribe("ql:*")
        self.received: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.1)
            if message and message["type"] == "psubscribe":
                break
        self.pubsub.ignore_subscribe_messages = True


@pytest.fixture
def events(redis_server: RedisServer, lua: LuaScript) -> Iterator[EventRecorder]:
    """A pub/sub recorder on every ql:* channel, subscribed before the test starts."""
    recorder = AckedEventRecorder(redis_server.client(decode_responses=True))
    try:
        yield recorder
    finally:
        recorder.close()
