"""Settings -> redis-py clients: URL kinds, Sentinel, pools shared per URL, routing, resets."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.sentinel
from django.test import override_settings

import django_qless
from django_qless import connection
from django_qless.conf import get_settings
from django_qless.connection import (
    aliases_for_queues,
    build_redis,
    client_for_queue,
    get_client,
    reset_clients,
)
from django_qless.core import Client
from django_qless.exceptions import QlessConfigurationError


def two_connections(url: str) -> dict[str, Any]:
    """QLESS with the default connection on db 0 and `reports` on db 1."""
    return {
        "URL": url,
        "CONNECTIONS": {"reports": {"URL": url[:-1] + "1", "QUEUES": ["reports", "audit"]}},
    }


def test_get_client_talks_to_the_configured_server(qless: Client, redis_client: Any) -> None:
    assert isinstance(qless, Client)
    qless.redis.set("probe", "1")
    assert redis_client.get("probe") == "1"


def test_get_client_is_cached_and_exported(qless: Client) -> None:
    assert get_client() is qless
    assert django_qless.get_client() is qless


def test_max_payload_bytes_reaches_the_client(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": qless_url, "MAX_PAYLOAD_BYTES": 123}
    assert get_client().max_payload_bytes == 123


def test_unknown_alias_names_the_configured_ones() -> None:
    with pytest.raises(QlessConfigurationError, match=r"no connection 'nope'.*default"):
        get_client("nope")


def test_settings_change_rebuilds_clients(settings: Any, qless_url: str) -> None:
    before = get_client()
    settings.QLESS = {"URL": qless_url[:-1] + "1"}
    after = get_client()
    assert after is not before
    assert after.redis.connection_pool.connection_kwargs["db"] == 1


def test_override_settings_rebuilds_and_restores(qless_url: str) -> None:
    outer = get_client()
    with override_settings(QLESS={"URL": qless_url[:-1] + "2"}):
        assert get_client().redis.connection_pool.connection_kwargs["db"] == 2
    assert get_client() is not outer
    assert get_client().redis.connection_pool.connection_kwargs["db"] == 0


def test_reset_clients_closes_and_forgets(qless: Client) -> None:
    reset_clients()
    assert get_client() is not qless


def test_same_url_shares_one_pool(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"CONNECTIONS": {"default": {"URL": qless_url}, "b": {"URL": qless_url}}}
    assert get_client("default") is not get_client("b")
    assert get_client("default").redis is get_client("b").redis


def test_queues_route_to_their_connection(settings: Any, qless_url: str) -> None:
    settings.QLESS = two_connections(qless_url)
    assert client_for_queue("reports") is get_client("reports")
    assert client_for_queue("audit") is get_client("reports")
    assert client_for_queue("anything-else") is get_client("default")
    assert get_client("reports").redis.connection_pool.connection_kwargs["db"] == 1


def test_aliases_for_queues_groups_in_order(settings: Any, qless_url: str) -> None:
    settings.QLESS = two_connections(qless_url)
    assert aliases_for_queues(["a", "audit", "b", "reports"]) == {
        "default": ["a", "b"],
        "reports": ["audit", "reports"],
    }


def conn(raw: dict[str, Any], settings: Any, alias: str = "default") -> Any:
    """The ConnectionSettings of `alias` under QLESS = raw."""
    settings.QLESS = raw
    return get_settings().connections[alias]


def test_rediss_url_builds_tls_connections(settings: Any) -> None:
    client = build_redis(conn(
        {"URL": "rediss://u:p@tls.example:6380/3", "OPTIONS": {"ssl_cert_reqs": "none"}}, settings
    ))
    pool = client.connection_pool
    assert pool.connection_class is redis.connection.SSLConnection
    assert pool.connection_kwargs["host"] == "tls.example"
    assert pool.connection_kwargs["port"] == 6380
    assert pool.connection_kwargs["db"] == 3
    assert pool.connection_kwargs["ssl_cert_reqs"] == "none"
    assert (pool.connection_kwargs["username"], pool.connection_kwargs["password"]) == ("u", "p")


def test_unix_url_builds_socket_connections(settings: Any) -> None:
    client = build_redis(conn({"URL": "unix:///run/redis.sock?db=4"}, settings))
    pool = client.connection_pool
    assert pool.connection_class is redis.connection.UnixDomainSocketConnection
    assert pool.connection_kwargs["path"] == "/run/redis.sock"
    assert pool.connection_kwargs["db"] == 4


def test_options_reach_the_pool(settings: Any) -> None:
    client = build_redis(conn(
        {"URL": "redis://h/0", "OPTIONS": {"socket_timeout": 2.5, "max_connections": 7}}, settings
    ))
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 2.5
    assert client.connection_pool.max_connections == 7


def test_sentinel_url_builds_a_sentinel_managed_master(settings: Any) -> None:
    client = build_redis(conn({
        "URL": "redis+sentinel://:master-pw@s1:26380,s2/mymaster/5",
        "OPTIONS": {"socket_timeout": 3},
        "SENTINEL_OPTIONS": {"password": "sentinel-pw"},
    }, settings))
    pool = client.connection_pool
    assert isinstance(pool, redis.sentinel.SentinelConnectionPool)
    assert pool.service_name == "mymaster"
    assert pool.is_master
    assert pool.connection_class is redis.sentinel.SentinelManagedConnection
    assert pool.connection_kwargs["db"] == 5
    assert pool.connection_kwargs["password"] == "master-pw"
    assert pool.connection_kwargs["socket_timeout"] == 3
    sentinels = pool.sentinel_manager.sentinels
    addresses = [
        (s.connection_pool.connection_kwargs["host"], s.connection_pool.connection_kwargs["port"])
        for s in sentinels
    ]
    assert addresses == [("s1", 26380), ("s2", 26379)]
    assert {s.connection_pool.connection_kwargs["password"] for s in sentinels} == {"sentinel-pw"}


def test_rediss_sentinel_uses_tls_connections(settings: Any) -> None:
    client = build_redis(conn({"URL": "rediss+sentinel://s1/mymaster"}, settings))
    assert client.connection_pool.connection_class is redis.sentinel.SentinelManagedSSLConnection


def test_building_clients_does_no_io(settings: Any) -> None:
    # Nothing listens on port 1: building must not connect, only using the client does.
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    client = get_client()
    with pytest.raises(redis.ConnectionError):
        client.redis.ping()


def test_a_forked_process_builds_its_own_clients(
    qless: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "_pid", -1)  # as if this process were a fork
    child = get_client()
    assert child is not qless
    assert child.redis is not qless.redis
    assert get_client() is child
