"""Reading the `QLESS` setting: validated lazily into the `conf.schema` dataclasses, cached.

The cache is dropped whenever Django announces a change of `QLESS` (`override_settings`,
the `settings` fixture), so the next `get_settings()` reads the new value.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from ..core import validation
from ..core.exceptions import InvalidArgumentError
from ..core.replication import ReplicaAck
from ..exceptions import QlessConfigurationError
from ..redis_urls import (
    SentinelSettings,
    allowed_options,
    check_url,
    option_problem,
    redis_client_options,
)
from .hooks import read_hooks
from .schema import (
    ADMIN_KEYS,
    CONNECTION_KEYS,
    DEFAULT_ALIAS,
    DEFAULT_MASKED_DATA_KEYS,
    DEFAULT_MASKED_PATTERNS,
    DEFAULT_URL,
    DEFAULTS,
    REPLICA_ACK_KEYS,
    TOP_KEYS,
    WORKER_KEYS,
    AdminSettings,
    ConnectionSettings,
    OutboxSettings,
    QlessSettings,
    WorkerSettings,
)
from .worker_table import WORKER_OPTIONS


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
    default_queue = reader.queue_name(raw, "DEFAULT_QUEUE", "QLESS", DEFAULTS.default_queue)
    heartbeat = reader.number(raw, "HEARTBEAT", "QLESS", DEFAULTS.heartbeat, minimum=0,
                              exclusive=True)
    result = QlessSettings(
        connections=MappingProxyType(read_connections(reader, raw)),
        worker=read_worker(reader, raw.get("WORKER", {}), default_queue, heartbeat),
        default_queue=default_queue,
        immediate=reader.boolean(raw, "IMMEDIATE", "QLESS", DEFAULTS.immediate),
        enqueue_on_commit=reader.boolean(
            raw, "ENQUEUE_ON_COMMIT", "QLESS", DEFAULTS.enqueue_on_commit
        ),
        max_payload_bytes=cast(
            int, reader.integer(raw, "MAX_PAYLOAD_BYTES", "QLESS", DEFAULTS.max_payload_bytes)
        ),
        put_memory_limit=read_memory_limit(reader, raw),
        heartbeat=heartbeat,
        admin=read_admin(reader, raw.get("ADMIN", {})),
        recurring=MappingProxyType(reader.mapping(raw, "RECURRING", "QLESS")),
        store_results=reader.boolean(raw, "STORE_RESULTS", "QLESS", DEFAULTS.store_results),
        metrics_token=read_metrics_token(reader, raw),
        result_max_bytes=cast(
            int, reader.integer(raw, "RESULT_MAX_BYTES", "QLESS", DEFAULTS.result_max_bytes)
        ),
        require_durable_redis=reader.boolean(
            raw, "REQUIRE_DURABLE_REDIS", "QLESS", DEFAULTS.require_durable_redis
        ),
        outbox=read_outbox(reader, raw),
        hooks=read_hooks(reader, raw),
    )
    return (None if reader.problems else result), tuple(reader.problems)


def read_outbox(reader: Reader, raw: Mapping[str, Any]) -> OutboxSettings:
    """`OUTBOX` (on or off) and how the workers sweep it."""
    default = DEFAULTS.outbox
    return OutboxSettings(
        enabled=reader.boolean(raw, "OUTBOX", "QLESS", default.enabled),
        sweep_age=cast(float, reader.number(raw, "OUTBOX_SWEEP_AGE", "QLESS",
                                            default.sweep_age, minimum=0, exclusive=True)),
        sweep_interval=cast(float, reader.number(raw, "OUTBOX_SWEEP_INTERVAL", "QLESS",
                                                 default.sweep_interval, minimum=0,
                                                 exclusive=True)),
        batch_size=cast(int, reader.integer(raw, "OUTBOX_BATCH_SIZE", "QLESS",
                                            default.batch_size)),
    )


def read_metrics_token(reader: Reader, raw: Mapping[str, Any]) -> str | None:
    """`METRICS_TOKEN`: None, or a secret of at least 16 printable ASCII characters."""
    token = raw.get("METRICS_TOKEN")
    if token is None:
        return None
    if not (isinstance(token, str) and len(token) >= 16 and token.isascii()
            and token.isprintable() and " " not in token):
        reader.error("E040", "QLESS['METRICS_TOKEN']",
                     "must be a string of at least 16 printable ASCII characters without spaces")
        return None
    return token


def read_memory_limit(reader: Reader, raw: Mapping[str, Any]) -> float | None:
    """`PUT_MEMORY_LIMIT`: a share of maxmemory in (0, 1], or None to never refuse puts."""
    if "PUT_MEMORY_LIMIT" in raw and raw["PUT_MEMORY_LIMIT"] is None:
        return None
    value = raw.get("PUT_MEMORY_LIMIT", DEFAULTS.put_memory_limit)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        reader.error("E003", "QLESS['PUT_MEMORY_LIMIT']",
                     f"must be a number above 0 and at most 1, or None, got {value!r}")
        return DEFAULTS.put_memory_limit
    return float(value)


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
            if "URL" not in entry:
                reader.error("E004", f"{path}['URL']", "is required for a named connection")
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
        sentinel = dataclasses.replace(sentinel, options=MappingProxyType(sentinel_options))
    queues = reader.queue_names(entry, "QUEUES", path)
    replica_ack = read_replica_ack(reader, entry, path)
    return ConnectionSettings(alias, url, MappingProxyType(options), queues, sentinel, replica_ack)


def read_replica_ack(
    reader: Reader, entry: Mapping[str, Any], path: str
) -> ReplicaAck | None:
    """`REPLICA_ACK`: None, or {'REPLICAS': n >= 1, 'TIMEOUT': seconds} for WAIT."""
    value = entry.get("REPLICA_ACK")
    where = f"{path}['REPLICA_ACK']"
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != set(REPLICA_ACK_KEYS):
        reader.error("E003", where, "must be None or a dict with exactly the keys "
                     f"'REPLICAS' and 'TIMEOUT' (seconds), got {value!r}")
        return None
    try:
        return ReplicaAck(replicas=value["REPLICAS"], timeout=value["TIMEOUT"])
    except InvalidArgumentError as exc:
        reader.error("E003", where, str(exc))
        return None


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
    """The `WORKER` dict: one value per table option with a key; `HEARTBEAT` feeds heartbeats."""
    path = "QLESS['WORKER']"
    if not isinstance(raw, Mapping):
        reader.error("E003", path, f"must be a dict, got {type(raw).__name__}")
        raw = {}
    reader.unknown_keys(raw, WORKER_KEYS, path)
    values = {
        option.name: option.kind.read(reader, raw, option.key, path, option.default)
        for option in WORKER_OPTIONS
        if option.key is not None
    }
    values["queues"] = values["queues"] or (default_queue,)
    return WorkerSettings(**values, heartbeat_interval=heartbeat)


def read_admin(reader: Reader, raw: object) -> AdminSettings:
    """The `ADMIN` dict."""
    path = "QLESS['ADMIN']"
    if not isinstance(raw, Mapping):
        reader.error("E003", path, f"must be a dict, got {type(raw).__name__}")
        return AdminSettings()
    reader.unknown_keys(raw, ADMIN_KEYS, path)
    keys = raw.get("MASKED_DATA_KEYS", DEFAULT_MASKED_DATA_KEYS)
    if isinstance(keys, str) or not isinstance(keys, list | tuple) or not all(
        isinstance(key, str) and key for key in keys
    ):
        reader.error(
            "E003", f"{path}['MASKED_DATA_KEYS']",
            f"must be a list of non-empty strings, got {keys!r}",
        )
        return AdminSettings()
    patterns = read_masked_patterns(reader, raw.get("MASKED_PATTERNS", DEFAULT_MASKED_PATTERNS))
    if patterns is None:
        return AdminSettings()
    # None turns the default off: only the queues' own thresholds apply.
    threshold = None if raw.get("LATENCY_THRESHOLD", 0) is None else reader.number(
        raw, "LATENCY_THRESHOLD", path, AdminSettings.latency_threshold, minimum=0,
        exclusive=True,
    )
    return AdminSettings(
        masked_data_keys=tuple(key.lower() for key in keys), masked_patterns=patterns,
        latency_threshold=threshold,
    )


def read_masked_patterns(reader: Reader, raw: object) -> tuple[str, ...] | None:
    """`ADMIN['MASKED_PATTERNS']`: regular expressions that compile and never match ""."""
    key = "QLESS['ADMIN']['MASKED_PATTERNS']"
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        reader.error("E003", key, f"must be a list of regular expressions, got {raw!r}")
        return None
    for pattern in raw:
        problem = pattern_problem(pattern)
        if problem:
            reader.error("E003", key, f"{pattern!r} {problem}")
            return None
    return tuple(raw)


def pattern_problem(pattern: object) -> str | None:
    """What makes `pattern` unusable for masking (None when it is fine)."""
    if not isinstance(pattern, str) or not pattern:
        return "is not a non-empty string"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    # A pattern matching nothing at all would put the mask between every two characters.
    if compiled.fullmatch(""):
        return "matches the empty text"
    return None


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
        self, raw: Mapping[str, Any], key: str, path: str, default: int | None,
        *, minimum: int = 1,
    ) -> int | None:
        """An int >= `minimum`, or None where None is the default."""
        value = raw.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.error("E003", f"{path}[{key!r}]",
                       f"must be an integer >= {minimum}, got {value!r}")
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

    def choice(
        self, raw: Mapping[str, Any], key: str, path: str, default: str,
        choices: tuple[str, ...],
    ) -> str:
        """One of `choices`."""
        value = raw.get(key, default)
        if value not in choices:
            self.error("E003", f"{path}[{key!r}]", f"must be one of {choices}, got {value!r}")
            return default
        return cast(str, value)

    def mapping(self, raw: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
        """A dict with string keys (empty when absent)."""
        value = raw.get(key, {})
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self.error("E003", f"{path}[{key!r}]",
                       f"must be a dict with string keys, got {value!r}")
            return {}
        return dict(value)

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
