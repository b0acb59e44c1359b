"""QLESS['CONNECTIONS'][alias]['REPLICA_ACK']: validated, and handed to that alias' client."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from django_qless.conf import parse
from django_qless.connection import get_client
from django_qless.core import ReplicaAck, ReplicationError
from django_qless.exceptions import QlessConfigurationError


def connection(ack: Any) -> dict[str, Any]:
    """A setting with one `default` connection carrying `ack`."""
    return {"CONNECTIONS": {"default": {"URL": "redis://h:6379/0", "REPLICA_ACK": ack}}}


def test_absent_or_none_means_no_acknowledgement() -> None:
    settings, problems = parse({"CONNECTIONS": {"default": {"URL": "redis://h:6379/0"}}})
    assert problems == () and settings is not None
    assert settings.connections["default"].replica_ack is None
    settings, _ = parse(connection(None))
    assert settings is not None and settings.connections["default"].replica_ack is None


def test_a_valid_setting_is_read() -> None:
    settings, problems = parse(connection({"REPLICAS": 2, "TIMEOUT": 0.25}))
    assert problems == () and settings is not None
    assert settings.connections["default"].replica_ack == ReplicaAck(replicas=2, timeout=0.25)


@pytest.mark.parametrize("ack", [
    1, "1", [1, 0.5], {}, {"REPLICAS": 1}, {"TIMEOUT": 0.5},
    {"REPLICAS": 1, "TIMEOUT": 0.5, "EXTRA": 1}, {"replicas": 1, "timeout": 0.5},
    {"REPLICAS": 0, "TIMEOUT": 0.5}, {"REPLICAS": True, "TIMEOUT": 0.5},
    {"REPLICAS": 1, "TIMEOUT": 0}, {"REPLICAS": 1, "TIMEOUT": "0.5"},
])
def test_a_malformed_setting_is_one_problem_naming_the_key(ack: Any) -> None:
    settings, problems = parse(connection(ack))
    assert settings is None
    assert [(p.key, p.id) for p in problems] == [
        ("QLESS['CONNECTIONS']['default']['REPLICA_ACK']", "django_qless.E003"),
    ]


def test_the_client_of_that_alias_waits_and_the_others_do_not(
    settings: Any, qless_url: str, redis_client: redis.Redis,
) -> None:
    settings.QLESS = {"CONNECTIONS": {
        "default": {"URL": qless_url},
        "acked": {"URL": qless_url, "QUEUES": ["safe"],
                  "REPLICA_ACK": {"REPLICAS": 1, "TIMEOUT": 0.02}},
    }}
    assert get_client("default").replica_ack is None
    acked = get_client("acked")
    assert acked.replica_ack == ReplicaAck(1, 0.02)
    # The test server has no replica: the put is written, and the caller is told.
    with pytest.raises(ReplicationError, match="job j1"):
        acked.queue("safe").put("K", {}, jid="j1")
    assert redis_client.hget("ql:j:j1", "state") == "waiting"


def test_a_bad_setting_stops_get_client(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"CONNECTIONS": {"default": {
        "URL": qless_url, "REPLICA_ACK": {"REPLICAS": 0, "TIMEOUT": 1},
    }}}
    with pytest.raises(QlessConfigurationError, match="REPLICA_ACK"):
        get_client()
