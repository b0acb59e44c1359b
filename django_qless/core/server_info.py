"""What the Redis server behind a connection says about itself, for operators.

One `INFO` call (its default sections) gives the version, uptime, clients, memory, the
eviction policy, persistence and the commands per second; the AOF fsync policy comes from
`core.persistence`. A managed Redis that forbids `INFO` yields no reading rather than an
error page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from .persistence import read_persistence

if TYPE_CHECKING:
    from .client import Client


@dataclass(frozen=True)
class ServerInfo:
    """One reading of a Redis server."""

    version: str
    mode: str
    uptime_seconds: int
    clients: int
    used_memory: int
    peak_memory: int
    #: 0 when no limit is set.
    max_memory: int
    eviction_policy: str
    ops_per_second: int
    keys: int
    aof: bool
    appendfsync: str | None
    #: Seconds since the last RDB save, None when never saved.
    last_save_ago: float | None
    #: Replicas connected to it (a primary), or its role.
    role: str
    replicas: int


def read_server_info(client: Client) -> ServerInfo | None:
    """The server's figures now; None when `INFO` is refused."""
    connection = client.redis
    try:
        info: dict[str, Any] = connection.info()
    except redis.ResponseError:
        return None
    try:
        persistence = read_persistence(connection)
        aof, fsync = persistence.aof, persistence.appendfsync
    except redis.ResponseError:
        aof, fsync = str(info.get("aof_enabled", 0)) == "1", None
    database = f"db{connection.connection_pool.connection_kwargs.get('db', 0)}"
    keyspace = info.get(database)
    last_save = info.get("rdb_last_save_time")
    return ServerInfo(
        version=str(info.get("redis_version", "?")),
        mode=str(info.get("redis_mode", "standalone")),
        uptime_seconds=int(info.get("uptime_in_seconds", 0)),
        clients=int(info.get("connected_clients", 0)),
        used_memory=int(info.get("used_memory", 0)),
        peak_memory=int(info.get("used_memory_peak", 0)),
        max_memory=int(info.get("maxmemory", 0)),
        eviction_policy=str(info.get("maxmemory_policy", "?")),
        ops_per_second=int(info.get("instantaneous_ops_per_sec", 0)),
        keys=int(keyspace.get("keys", 0)) if isinstance(keyspace, dict) else 0,
        aof=aof,
        appendfsync=fsync,
        last_save_ago=(max(0.0, client.now() - float(last_save))
                       if last_save and float(last_save) > 0 else None),
        role=str(info.get("role", "master")),
        replicas=int(info.get("connected_slaves", 0)),
    )
