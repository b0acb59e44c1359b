"""The monitor thread's own Redis connections, whose every call times out well within a lease.

The renewals, the lease-settings check, the presence report, the cron slot puts and the
lock-loss channel all run in the monitor thread. On the application's connections a call
into a dead network waits for `socket_timeout` (redis-py's default is 5 s, or none when
configured so), longer than a short lease. So the monitor gets a pool of its own, on the
same server and options, with `socket_timeout` and `socket_connect_timeout` cut to
`monitor_timeout(lease)`: a quarter of the shortest lease of the worker's queues, at most
1 s (and never above what is configured), and one immediate retry (a stale pooled
connection is replaced at once; the monitor's loop is the retry after that).
"""

from __future__ import annotations

from typing import Any

import redis
import redis.sentinel
from redis.backoff import NoBackoff
from redis.retry import Retry

#: The longest the monitor's calls wait (seconds), also before start-up has read the lease.
DEFAULT_TIMEOUT = 1.0
#: Under a short lease, the timeout is this share of it (but not below MIN_TIMEOUT).
LEASE_SHARE = 0.25
MIN_TIMEOUT = 0.1
#: Keys of a pool's connection arguments that belong to that pool alone (redis-py sets
#: them up for each pool it builds).
_POOL_OWN = frozenset({
    "connection_pool", "himport_registry", "maint_notifications_pool_handler",
    "maint_notifications_config", "orig_host_address", "orig_socket_timeout",
    "orig_socket_connect_timeout",
})


def monitor_timeout(lease: float) -> float:
    """The monitor's socket timeout for a shortest lease of `lease` seconds."""
    return min(max(lease * LEASE_SHARE, MIN_TIMEOUT), DEFAULT_TIMEOUT)


def monitor_redis(base: redis.Redis, timeout: float = DEFAULT_TIMEOUT) -> redis.Redis:
    """A client on a new pool with `base`'s server and options, its timeouts cut to `timeout`."""
    pool = base.connection_pool
    kwargs: dict[str, Any] = {key: value for key, value in pool.connection_kwargs.items()
                              if key not in _POOL_OWN}
    kwargs.update(_timeouts(pool.connection_kwargs, timeout),
                  retry=Retry(NoBackoff(), 1))
    own: redis.ConnectionPool
    if isinstance(pool, redis.sentinel.SentinelConnectionPool):
        own = redis.sentinel.SentinelConnectionPool(  # type: ignore[no-untyped-call]
            pool.service_name, pool.sentinel_manager, connection_class=pool.connection_class,
            is_master=pool.is_master, check_connection=pool.check_connection, **kwargs)
    else:
        own = redis.ConnectionPool(connection_class=pool.connection_class,
                                   max_connections=pool.max_connections, **kwargs)
    return redis.Redis(connection_pool=own)


def retime(client: redis.Redis, timeout: float) -> None:
    """Cut the timeouts of `client`'s connections to `timeout` (never raise them); the open
    ones are closed, to reconnect with it."""
    pool = client.connection_pool
    cut = _timeouts(pool.connection_kwargs, timeout)
    # redis-py goes back to the `orig_` values after a maintenance notification.
    cut.update({f"orig_{key}": value for key, value in cut.items()
                if f"orig_{key}" in pool.connection_kwargs})
    pool.update_connection_kwargs(**cut)  # type: ignore[no-untyped-call]
    pool.disconnect()


def _timeouts(configured: Any, timeout: float) -> dict[str, float]:
    """`socket_timeout` and `socket_connect_timeout`: the configured ones, at most `timeout`."""
    found = {}
    for key in ("socket_timeout", "socket_connect_timeout"):
        value = configured.get(key)
        found[key] = timeout if value is None else min(float(value), timeout)
    return found
