"""Fast checks of the lease settings guard and the persistence verdict (worker/health.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from django_qless.core import Client, commands
from django_qless.core.config import lease_problems
from django_qless.core.persistence import Persistence
from django_qless.exceptions import QlessConfigurationError
from django_qless.worker import health
from django_qless.worker.health import LeaseGuard, check_startup
from tests.redis_harness import RedisServer


@pytest.mark.parametrize(("values", "queues", "expected"), [
    ({}, ["q"], []),
    ({"heartbeat": "60", "grace-period": "0", "q-max-concurrency": "0"}, ["q"], []),
    ({"heartbeat": "-5"}, ["q"], ["qless config heartbeat = -5: the lease must be > 0"]),
    ({"heartbeat": "0"}, ["q"], ["qless config heartbeat = 0: the lease must be > 0"]),
    ({"heartbeat": "60", "q-heartbeat": "0"}, ["q"],
     ["qless config q-heartbeat = 0: the lease must be > 0"]),
    # A queue's own lease is the one the script uses for it.
    ({"heartbeat": "-5", "q-heartbeat": "3"}, ["q"], []),
    ({"heartbeat": "60", "other-heartbeat": "0"}, ["q"], []),
    ({"grace-period": "-3"}, ["q"], ["qless config grace-period = -3: the grace period must "
                                     "be >= 0"]),
    ({"grace-period": "abc"}, ["q"], ["qless config grace-period = 'abc': the grace period "
                                      "must be a number >= 0"]),
    ({"q-max-concurrency": "-1"}, ["q"], ["qless config q-max-concurrency = -1: the "
                                          "concurrency cap must be >= 0"]),
    # Without queues, every queue the settings name counts (the checks and the probe).
    ({"heartbeat": "60", "a-heartbeat": "-1", "b-max-concurrency": "-2"}, None,
     ["qless config a-heartbeat = -1: the lease must be > 0",
      "qless config b-max-concurrency = -2: the concurrency cap must be >= 0"]),
])
def test_unsafe_lease_settings_are_named_with_their_value(
    values: dict[str, str], queues: list[str] | None, expected: list[str]
) -> None:
    assert lease_problems(values, queues) == expected


@pytest.mark.parametrize(("persistence", "problem", "note"), [
    (Persistence(aof=False, appendfsync="everysec"), "appendonly is no", None),
    (Persistence(aof=False, appendfsync=None), "appendonly is no", None),
    (Persistence(aof=True, appendfsync="no"), "appendfsync is no", None),
    (Persistence(aof=True, appendfsync="everysec"), None, "up to about 1 s"),
    (Persistence(aof=True, appendfsync=None), None, "appendfsync unknown"),
    (Persistence(aof=True, appendfsync="always"), None, None),
])
def test_persistence_verdict(persistence: Persistence, problem: str | None,
                             note: str | None) -> None:
    for found, wanted in ((persistence.problem, problem), (persistence.note, note)):
        assert (found is None) is (wanted is None)
        assert wanted is None or wanted in str(found)


@pytest.fixture
def client(redis_server: RedisServer, redis_client: redis.Redis) -> Iterator[Client]:
    """A qless client on the suite's (flushed) server."""
    yield Client(redis_server.client())  # type: ignore[arg-type]


def plant(client: Client, key: str, value: int) -> None:
    """Store a value as another qless client can (the script takes any number)."""
    client.run(commands.config_set(key, value))


def test_the_guard_pauses_and_resumes_with_the_settings(
    client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(health, "CLOCK_CHECK_MIN", 0.0)
    monkeypatch.setattr(health, "CLOCK_CHECK_MAX", 0.0)
    guard = LeaseGuard(client, [client.queue("q")])
    guard.poll()
    assert guard.safe
    plant(client, "heartbeat", -5)
    guard.poll()
    assert not guard.safe
    assert "heartbeat = -5" in caplog.text and "not popping until it is fixed" in caplog.text
    client.config.unset("heartbeat")
    guard.poll()
    assert guard.safe
    assert "lease settings fixed; popping again" in caplog.text


def test_a_check_waits_for_its_interval_unless_forced(client: Client) -> None:
    guard = LeaseGuard(client, [client.queue("q")])
    plant(client, "q-heartbeat", 0)
    guard.poll()
    assert guard.safe  # not due yet: the first check is a second after start-up
    guard.poll(force=True)
    assert not guard.safe


def test_startup_refuses_an_unsafe_lease_before_judging_the_clock(client: Client) -> None:
    plant(client, "heartbeat", 0)
    with pytest.raises(QlessConfigurationError, match=r"heartbeat = 0: the lease must be > 0"):
        check_startup(client, [client.queue("q")], require_durable=False)


def test_startup_warns_or_refuses_over_persistence(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    # The suite's server runs without an AOF.
    check_startup(client, [client.queue("q")], require_durable=False)
    assert "appendonly is no" in caplog.text
    with pytest.raises(QlessConfigurationError,
                       match=r"appendonly is no.*REQUIRE_DURABLE_REDIS'\] is on"):
        check_startup(client, [client.queue("q")], require_durable=True)
