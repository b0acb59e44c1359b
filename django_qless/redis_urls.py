"""Redis URLs and redis-py options, checked without connecting to anything.

Plain URLs are what redis-py reads (`redis://`, `rediss://`, `unix://`); Sentinel URLs are
`redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db]`
(`rediss+sentinel://` for TLS to the master).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

import redis
import redis.connection

SENTINEL_PORT = 26379
PLAIN_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
# redis-py leaves parse_url unannotated; this gives it the type it has.
_parse_url: Callable[[str], dict[str, Any]] = redis.connection.parse_url

#: Connection options whose values are checked here rather than at first connect.
NUMBER_OPTIONS = ("socket_timeout", "socket_connect_timeout", "health_check_interval")
INT_OPTIONS = ("max_connections", "db", "port", "socket_read_size")
BOOL_OPTIONS = ("retry_on_timeout", "decode_responses", "socket_keepalive", "ssl_check_hostname")


@dataclass(frozen=True)
class SentinelSettings:
    """Where to find the master of a Sentinel-managed Redis."""

    hosts: tuple[tuple[str, int], ...]
    service_name: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def option_problem(name: str, value: object) -> str | None:
    """What is wrong with the value of a well-known redis-py option, if anything."""
    number_ok = (
        isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    )
    if name in NUMBER_OPTIONS and value is not None and not number_ok:
        return f"must be a number >= 0 or None, got {value!r}"
    if name in INT_OPTIONS and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be an integer, got {value!r}"
    if name in BOOL_OPTIONS and not isinstance(value, bool):
        return f"must be True or False, got {value!r}"
    return None


def check_url(url: str) -> tuple[str, SentinelSettings | None]:
    """Parse a Redis URL without connecting; returns its scheme and Sentinel details."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme in SENTINEL_SCHEMES:
        return scheme, parse_sentinel_url(url)
    if scheme not in PLAIN_SCHEMES:
        schemes = ", ".join(f"{s}://" for s in PLAIN_SCHEMES + SENTINEL_SCHEMES)
        raise ValueError(f"scheme must be one of {schemes}")
    _parse_url(url)
    return scheme, None


def parse_sentinel_url(url: str) -> SentinelSettings:
    """`redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db]`."""
    scheme, _, rest = url.partition("://")
    if "?" in rest or "#" in rest:
        raise ValueError("Sentinel URLs take no query string: put options in OPTIONS")
    netloc, _, path = rest.partition("/")
    userinfo, _, hostlist = netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    hosts = tuple(_host_port(item) for item in hostlist.split(","))
    parts = path.split("/")
    if not parts[0] or len(parts) > 2:
        raise ValueError("the path must be /<service name> or /<service name>/<db>")
    db = parts[1] if len(parts) == 2 and parts[1] else "0"
    if not db.isdigit():
        raise ValueError(f"the database must be a number, got {db!r}")
    return SentinelSettings(
        hosts=hosts, service_name=unquote(parts[0]), db=int(db),
        username=unquote(username) or None, password=unquote(password) or None,
        tls=scheme.lower() == "rediss+sentinel",
    )


def _host_port(item: str) -> tuple[str, int]:
    """`host`, `host:port` or `[ipv6]:port`, with the Sentinel port as default."""
    if item.startswith("["):
        host, _, tail = item[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = item.partition(":")
    if not host:
        raise ValueError(f"empty Sentinel host in {item!r}")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"bad port in Sentinel host {item!r}")
    return unquote(host), int(port) if port else SENTINEL_PORT


@functools.cache
def allowed_options(scheme: str) -> frozenset[str]:
    """Keyword names the connection class of `scheme` and its pool accept (empty: unknown)."""
    classes: dict[str, type[Any]] = {
        "redis": redis.connection.Connection,
        "rediss": redis.connection.SSLConnection,
        "unix": redis.connection.UnixDomainSocketConnection,
        "redis+sentinel": redis.connection.Connection,
        "rediss+sentinel": redis.connection.SSLConnection,
    }
    if scheme not in classes:
        return frozenset()
    cls = classes[scheme]
    names = _parameters(redis.connection.AbstractConnection.__init__)
    names |= _parameters(redis.connection.ConnectionPool.__init__)
    for klass in cls.__mro__:
        if klass is not object and "__init__" in vars(klass):
            names |= _parameters(vars(klass)["__init__"])
    return frozenset(names - {"connection_class"})


@functools.cache
def redis_client_options() -> frozenset[str]:
    """Keyword names `redis.Redis(...)` accepts (used for the Sentinels' own connections)."""
    return frozenset(_parameters(redis.Redis.__init__) - {"host", "port"})


def _parameters(func: Callable[..., Any]) -> set[str]:
    """Named parameters of a callable (not self, *args or **kwargs)."""
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return {
        name for name, param in inspect.signature(func).parameters.items()
        if name != "self" and param.kind not in skip
    }
