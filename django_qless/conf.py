"""The `QLESS` setting: read lazily, merged with defaults into frozen dataclasses, cached.

The cache is dropped whenever Django announces a change of `QLESS` (`override_settings`,
the `settings` fixture), so the next `get_settings()` reads the new value.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast
from urllib.parse import unquote

import redis
import redis.connection
from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from .core import validation
from .exceptions import QlessConfigurationError

Strategy = Literal["ordered", "round-robin", "shuffle"]
STRATEGIES: tuple[Strategy, ...] = ("ordered", "round-robin", "shuffle")
DEFAULT_URL = "redis://localhost:6379/0"
DEFAULT_ALIAS = "default"
SENTINEL_PORT = 26379
PLAIN_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
# redis-py leaves parse_url unannotated; this gives it the type it has.
_parse_url: Callable[[str], dict[str, Any]] = redis.connection.parse_url

TOP_KEYS = (
    "URL", "OPTIONS", "SENTINEL_OPTIONS", "CONNECTIONS", "DEFAULT_QUEUE", "IMMEDIATE",
    "ENQUEUE_ON_COMMIT", "MAX_PAYLOAD_BYTES", "HEARTBEAT", "WORKER",
)
CONNECTION_KEYS = ("URL", "OPTIONS", "SENTINEL_OPTIONS", "QUEUES")
WORKER_KEYS = (
    "QUEUES", "STRATEGY", "PROCESSES", "MAX_JOBS", "MAX_MEMORY_MB", "TIME_LIMIT",
    "SHUTDOWN_TIMEOUT", "POLL_INTERVAL",
)
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


@dataclass(frozen=True)
class ConnectionSettings:
    """One named Redis connection and the queues routed to it."""

    alias: str
    url: str
    options: Mapping[str, Any]
    queues: tuple[str, ...]
    sentinel: SentinelSettings | None = None


@dataclass(frozen=True)
class WorkerSettings:
    """Defaults for `manage.py qless_worker` (its command-line options win)."""

    queues: tuple[str, ...]
    strategy: Strategy = "ordered"
    processes: int = 1
    max_jobs: int | None = None
    max_memory_mb: int | None = None
    time_limit: float | None = None
    shutdown_timeout: float = 30.0
    poll_interval: float = 5.0
    #: Seconds between lease renewals of a running job; None = a third of the queue's lease.
    heartbeat_interval: float | None = None


@dataclass(frozen=True)
class QlessSettings:
    """The whole `QLESS` setting, validated."""

    connections: Mapping[str, ConnectionSettings]
    worker: WorkerSettings
    default_queue: str = "default"
    immediate: bool = False
    enqueue_on_commit: bool = True
    max_payload_bytes: int = 1_048_576
    heartbeat: float | None = None


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the setting: a check id, the key, and what is wrong."""

    id: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key} {self.message}"


def get_settings() -> QlessSettings:
    """The current `QLESS` setting (cached); raises `QlessConfigurationError` if malformed."""
    loaded, problems = _load()
    if loaded is None:
        raise QlessConfigurationError("; ".join(str(p) for p in problems))
    return loaded


def problems() -> list[Problem]:
    """Everything wrong with the current `QLESS` setting (used by the system checks)."""
    return list(_load()[1])


@functools.cache
def _load() -> tuple[QlessSettings | None, tuple[Problem, ...]]:
    """Parse `settings.QLESS` once per settings change."""
    return parse(getattr(django_settings, "QLESS", {}))


def clear_cache() -> None:
    """Forget the parsed setting; the next `get_settings()` reads it again."""
    _load.cache_clear()


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    """Re-read `QLESS` after `override_settings` or the `settings` fixture change it."""
    if setting == "QLESS":
        clear_cache()


def parse(raw: object) -> tuple[QlessSettings | None, tuple[Problem, ...]]:
    """Validate a raw `QLESS` value; returns the settings (None if any problem) and problems."""
    reader = Reader()
    if not isinstance(raw, Mapping):
        reader.error("E001", "QLESS", f"must be a dict, got {type(raw).__name__}")
        return None, tuple(reader.problems)
    reader.unknown_keys(raw, TOP_KEYS, "QLESS")
    default_queue = reader.queue_name(raw, "DEFAULT_QUEUE", "QLESS", "default")
    heartbeat = reader.number(raw, "HEARTBEAT", "QLESS", None, minimum=0, exclusive=True)
    result = QlessSettings(
        connections=MappingProxyType(read_connections(reader, raw)),
        worker=read_worker(reader, raw.get("WORKER", {}), default_queue, heartbeat),
        default_queue=default_queue,
        immediate=reader.boolean(raw, "IMMEDIATE", "QLESS", False),
        enqueue_on_commit=reader.boolean(raw, "ENQUEUE_ON_COMMIT", "QLESS", True),
        max_payload_bytes=cast(int, reader.integer(raw, "MAX_PAYLOAD_BYTES", "QLESS", 1_048_576)),
        heartbeat=heartbeat,
    )
    return (None if reader.problems else result), tuple(reader.problems)


def read_connections(reader: Reader, raw: Mapping[str, Any]) -> dict[str, ConnectionSettings]:
    """The `CONNECTIONS` dict plus the top-level `URL` shorthand for the default one."""
    declared = raw.get("CONNECTIONS", {})
    if not isinstance(declared, Mapping):
        reader.error("E003", "QLESS['CONNECTIONS']", "must be a dict of alias -> connection")
        declared = {}
    if "URL" in raw and DEFAULT_ALIAS in declared:
        reader.error(
            "E005", "QLESS['URL']",
            "and QLESS['CONNECTIONS']['default'] both define the default connection: keep one",
        )
    connections: dict[str, ConnectionSettings] = {}
    if DEFAULT_ALIAS not in declared:
        top = {key: raw[key] for key in ("URL", "OPTIONS", "SENTINEL_OPTIONS") if key in raw}
        connections[DEFAULT_ALIAS] = read_connection(reader, DEFAULT_ALIAS, top, "QLESS")
    for alias, entry in declared.items():
        path = f"QLESS['CONNECTIONS'][{alias!r}]"
        if not isinstance(alias, str) or not alias:
            reader.error("E003", path, "alias must be a non-empty string")
        elif not isinstance(entry, Mapping):
            reader.error("E003", path, f"must be a dict, got {type(entry).__name__}")
        else:
            reader.unknown_keys(entry, CONNECTION_KEYS, path)
            connections[alias] = read_connection(reader, alias, entry, path)
    check_routing(reader, connections)
    return connections


def read_connection(
    reader: Reader, alias: str, entry: Mapping[str, Any], path: str
) -> ConnectionSettings:
    """One connection: URL (checked without connecting), options, queues."""
    url = entry.get("URL", DEFAULT_URL)
    sentinel: SentinelSettings | None = None
    scheme = ""
    if not isinstance(url, str):
        reader.error("E004", f"{path}['URL']", f"must be a string, got {type(url).__name__}")
        url = DEFAULT_URL
    try:
        scheme, sentinel = check_url(url)
    except ValueError as exc:
        reader.error("E004", f"{path}['URL']", f"is not a usable Redis URL: {exc}")
    options = reader.options(entry, "OPTIONS", path, allowed_options(scheme))
    sentinel_options = reader.options(
        entry, "SENTINEL_OPTIONS", path, redis_client_options()
    )
    if sentinel_options and sentinel is None and scheme:
        reader.error("E003", f"{path}['SENTINEL_OPTIONS']", "needs a redis+sentinel:// URL")
    if sentinel is not None:
        sentinel = _replace_options(sentinel, sentinel_options)
    queues = reader.queue_names(entry, "QUEUES", path)
    return ConnectionSettings(alias, url, MappingProxyType(options), queues, sentinel)


def check_routing(reader: Reader, connections: Mapping[str, ConnectionSettings]) -> None:
    """A queue may be routed to one connection only."""
    owner: dict[str, str] = {}
    for alias, conn in connections.items():
        for queue in conn.queues:
            if queue in owner and owner[queue] != alias:
                reader.error(
                    "E006", f"QLESS['CONNECTIONS'][{alias!r}]['QUEUES']",
                    f"lists queue {queue!r}, already routed to connection {owner[queue]!r}",
                )
            owner.setdefault(queue, alias)


def read_worker(
    reader: Reader, raw: object, default_queue: str, heartbeat: float | None
) -> WorkerSettings:
    """The `WORKER` dict."""
    path = "QLESS['WORKER']"
    if not isinstance(raw, Mapping):
        reader.error("E003", path, f"must be a dict, got {type(raw).__name__}")
        raw = {}
    reader.unknown_keys(raw, WORKER_KEYS, path)
    strategy = raw.get("STRATEGY", "ordered")
    if strategy not in STRATEGIES:
        reader.error(
            "E003", f"{path}['STRATEGY']", f"must be one of {STRATEGIES}, got {strategy!r}"
        )
        strategy = "ordered"
    queues = reader.queue_names(raw, "QUEUES", path) or (default_queue,)
    return WorkerSettings(
        queues=queues,
        strategy=strategy,
        processes=cast(int, reader.integer(raw, "PROCESSES", path, 1)),
        max_jobs=reader.integer(raw, "MAX_JOBS", path, None),
        max_memory_mb=reader.integer(raw, "MAX_MEMORY_MB", path, None),
        time_limit=reader.number(raw, "TIME_LIMIT", path, None, minimum=0, exclusive=True),
        shutdown_timeout=cast(float, reader.number(raw, "SHUTDOWN_TIMEOUT", path, 30.0, minimum=0)),
        poll_interval=cast(
            float, reader.number(raw, "POLL_INTERVAL", path, 5.0, minimum=0, exclusive=True)
        ),
        heartbeat_interval=heartbeat,
    )


class Reader:
    """Reads typed values out of the raw setting, collecting a `Problem` per bad key."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def error(self, check_id: str, key: str, message: str) -> None:
        """Record a problem."""
        self.problems.append(Problem(f"django_qless.{check_id}", key, message))

    def unknown_keys(self, raw: Mapping[str, Any], known: tuple[str, ...], path: str) -> None:
        """Flag keys nobody reads (usually typos)."""
        for key in raw:
            if key not in known:
                self.error(
                    "E002", f"{path}[{key!r}]", f"is not a known key; expected one of {known}"
                )

    def boolean(self, raw: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        """A True/False value."""
        value = raw.get(key, default)
        if not isinstance(value, bool):
            self.error("E003", f"{path}[{key!r}]", f"must be True or False, got {value!r}")
            return default
        return value

    def integer(
        self, raw: Mapping[str, Any], key: str, path: str, default: int | None
    ) -> int | None:
        """An int >= 1, or None where None is the default."""
        value = raw.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.error("E003", f"{path}[{key!r}]", f"must be an integer >= 1, got {value!r}")
            return default
        return value

    def number(
        self, raw: Mapping[str, Any], key: str, path: str, default: float | None,
        *, minimum: float, exclusive: bool = False,
    ) -> float | None:
        """A finite number above (or at least) `minimum`, or None where None is the default."""
        value = raw.get(key, default)
        if value is None and default is None:
            return None
        low_ok = isinstance(value, int | float) and (
            value > minimum if exclusive else value >= minimum
        )
        if isinstance(value, bool) or not low_ok or not math.isfinite(value):
            bound = f"> {minimum}" if exclusive else f">= {minimum}"
            self.error("E003", f"{path}[{key!r}]", f"must be a number {bound}, got {value!r}")
            return default
        return float(value)

    def queue_name(self, raw: Mapping[str, Any], key: str, path: str, default: str) -> str:
        """A valid qless queue name."""
        value = raw.get(key, default)
        try:
            return validation.queue_name(value)
        except ValueError as exc:
            self.error("E003", f"{path}[{key!r}]", f"is not a valid queue name: {exc}")
            return default

    def queue_names(self, raw: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
        """A list or tuple of valid queue names (empty when absent)."""
        value = raw.get(key, ())
        if isinstance(value, str) or not isinstance(value, list | tuple):
            self.error("E003", f"{path}[{key!r}]", f"must be a list of queue names, got {value!r}")
            return ()
        names = []
        for item in value:
            try:
                names.append(validation.queue_name(item))
            except ValueError as exc:
                self.error("E003", f"{path}[{key!r}]", f"has an invalid queue name: {exc}")
        return tuple(dict.fromkeys(names))

    def options(
        self, raw: Mapping[str, Any], key: str, path: str, allowed: frozenset[str]
    ) -> dict[str, Any]:
        """Keyword arguments for redis-py, checked by name and (for common ones) type."""
        value = raw.get(key, {})
        where = f"{path}[{key!r}]"
        if not isinstance(value, Mapping):
            self.error("E003", where, f"must be a dict of redis-py options, got {value!r}")
            return {}
        for name, item in value.items():
            if allowed and name not in allowed:
                self.error("E007", f"{where}[{name!r}]", "is not an option redis-py accepts here")
            elif problem := option_problem(name, item):
                self.error("E003", f"{where}[{name!r}]", problem)
        return dict(value)


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


def _replace_options(sentinel: SentinelSettings, options: Mapping[str, Any]) -> SentinelSettings:
    """A copy of `sentinel` with the options used to talk to the Sentinels themselves."""
    return SentinelSettings(
        hosts=sentinel.hosts, service_name=sentinel.service_name, db=sentinel.db,
        username=sentinel.username, password=sentinel.password, tls=sentinel.tls,
        options=MappingProxyType(dict(options)),
    )


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
