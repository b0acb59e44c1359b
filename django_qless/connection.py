"""Settings -> redis-py connections -> `core.Client`s, one pool per URL per process."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

import redis
import redis.sentinel
from django.core.signals import setting_changed
from django.dispatch import receiver

from .conf import DEFAULT_ALIAS, ConnectionSettings, get_settings
from .core import Client
from .exceptions import QlessConfigurationError

# redis-py leaves Sentinel unannotated; this gives it the type it has.
_sentinel: Callable[..., redis.sentinel.Sentinel] = redis.sentinel.Sentinel
_lock = threading.Lock()
# Keyed by (url, options): aliases with the same URL and options share one pool.
_connections: dict[tuple[str, str], redis.Redis] = {}
_clients: dict[str, Client] = {}
_pid = os.getpid()


def get_client(alias: str = DEFAULT_ALIAS) -> Client:
    """The qless client of a configured connection (built on first use, then cached)."""
    _forget_if_forked()
    client = _clients.get(alias)
    if client is not None:
        return client
    with _lock:
        if alias not in _clients:
            settings = get_settings()
            if alias not in settings.connections:
                known = ", ".join(sorted(settings.connections))
                raise QlessConfigurationError(
                    f"QLESS['CONNECTIONS'] has no connection {alias!r} (configured: {known})"
                )
            _clients[alias] = Client(
                _redis_for(settings.connections[alias]),
                max_payload_bytes=settings.max_payload_bytes,
                put_memory_limit=settings.put_memory_limit,
                replica_ack=settings.connections[alias].replica_ack,
            )
        return _clients[alias]


def alias_for_queue(queue: str) -> str:
    """The alias of the connection whose QUEUES list `queue`, else "default"."""
    for alias, conn in get_settings().connections.items():
        if queue in conn.queues:
            return alias
    return DEFAULT_ALIAS


def client_for_queue(queue: str) -> Client:
    """The client of the connection a queue is routed to."""
    return get_client(alias_for_queue(queue))


def aliases_for_queues(queues: Iterable[str]) -> dict[str, list[str]]:
    """Group queue names by connection alias, keeping their order."""
    grouped: dict[str, list[str]] = {}
    for queue in queues:
        grouped.setdefault(alias_for_queue(queue), []).append(queue)
    return grouped


def reset_clients() -> None:
    """Drop cached clients and close their pools (the next use builds new ones)."""
    with _lock:
        connections = list(_connections.values())
        _connections.clear()
        _clients.clear()
    for connection in connections:
        connection.close()


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    """Rebuild clients after `QLESS` changes (override_settings, the settings fixture)."""
    if setting == "QLESS":
        reset_clients()


def build_redis(conn: ConnectionSettings) -> redis.Redis:
    """A new redis-py client for a connection: plain URL or Sentinel; no I/O happens here."""
    sentinel = conn.sentinel
    if sentinel is None:
        return redis.Redis.from_url(conn.url, **conn.options)
    manager = _sentinel(list(sentinel.hosts), sentinel_kwargs=dict(sentinel.options) or None)
    kwargs: dict[str, Any] = {"db": sentinel.db, **conn.options}
    if sentinel.username is not None:
        kwargs.setdefault("username", sentinel.username)
    if sentinel.password is not None:
        kwargs.setdefault("password", sentinel.password)
    if sentinel.tls:
        kwargs["ssl"] = True
    master_for: Callable[..., redis.Redis] = manager.master_for
    return master_for(sentinel.service_name, **kwargs)


def _redis_for(conn: ConnectionSettings) -> redis.Redis:
    """The shared redis-py client for a URL and options (caller holds `_lock`)."""
    key = (conn.url, repr(sorted(conn.options.items())) + repr(conn.sentinel))
    if key not in _connections:
        _connections[key] = build_redis(conn)
    return _connections[key]


def _forget_if_forked() -> None:
    """A forked child builds its own clients: worker names embed the pid."""
    global _pid
    if os.getpid() != _pid:
        with _lock:
            _connections.clear()
            _clients.clear()
            _pid = os.getpid()


def forget_after_fork() -> list[redis.Redis]:
    """In a forked child: forget the parent's clients now, under a new lock (a thread of
    the parent may have held the old one at the fork); returns their redis-py clients."""
    global _lock, _pid  # noqa: PLW0603 - this process's own copies, once after the fork
    _lock = threading.Lock()
    inherited = list(_connections.values())
    _connections.clear()
    _clients.clear()
    _pid = os.getpid()
    return inherited
