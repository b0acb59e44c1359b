"""Fixtures running the PyPI qless-py client on our qless.lua, the test redis and a fake clock."""

from __future__ import annotations

import importlib
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.conftest import SCRIPT_PATH
from tests.redis_harness import RedisServer
from tests.support import FakeClock


def wait_for_subscribers(client: redis.Redis, channel: str, timeout: float = 5.0) -> None:
    """Block until a listener thread has subscribed, so no early publish is lost."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dict(client.pubsub_numsub(channel)).get(channel, 0) > 0:
            return
        time.sleep(0.01)
    raise AssertionError(f"nobody subscribed to {channel}")


@pytest.fixture
def qless_py(
    redis_server: RedisServer,
    redis_client: redis.Redis,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[str], Any]]:
    """Builds `qless.Client(url, hostname=...)` objects that register OUR script, not qless-py's.

    qless-py reads its vendored script with `pkgutil.get_data('qless', 'qless-core/qless.lua')`
    inside `Client.__init__`; that lookup is redirected to the built django_qless script. Its
    clock (`time.time` in `qless` and `qless.job`) is redirected to the fake clock, so every
    call carries an explicit `now`.
    """
    qless = pytest.importorskip("qless")
    qless_job = importlib.import_module("qless.job")
    qless_queue = importlib.import_module("qless.queue")

    ours = SCRIPT_PATH.read_bytes()

    def get_data(package: str, resource: str) -> bytes:
        assert (package, resource) == ("qless", "qless-core/qless.lua")
        return ours

    fake_time = types.SimpleNamespace(time=clock)
    monkeypatch.setattr(qless, "pkgutil", types.SimpleNamespace(get_data=get_data))
    monkeypatch.setattr(qless, "time", fake_time)
    monkeypatch.setattr(qless_job, "time", fake_time)
    monkeypatch.setattr(qless_queue, "time", fake_time)
    made: list[Any] = []

    def make(hostname: str = "py-worker") -> Any:
        client = qless.Client(redis_server.url, hostname=hostname)
        made.append(client)
        return client

    yield make
    for client in made:
        client.redis.close()
