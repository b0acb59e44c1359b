"""The shape of the `QLESS` setting: its known keys, defaults and frozen dataclasses."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..core.hooks import HookSet
from ..core.replication import ReplicaAck
from ..redis_urls import SentinelSettings
from .worker_table import WORKER_OPTIONS, Isolation, Strategy, worker_default

DEFAULT_URL = "redis://localhost:6379/0"
DEFAULT_ALIAS = "default"
TOP_KEYS = (
    "URL", "OPTIONS", "SENTINEL_OPTIONS", "CONNECTIONS", "DEFAULT_QUEUE", "IMMEDIATE",
    "ENQUEUE_ON_COMMIT", "MAX_PAYLOAD_BYTES", "HEARTBEAT", "WORKER", "ADMIN",
    "RECURRING", "PUT_MEMORY_LIMIT", "STORE_RESULTS", "RESULT_MAX_BYTES", "METRICS_TOKEN",
    "REQUIRE_DURABLE_REDIS", "OUTBOX", "OUTBOX_SWEEP_AGE", "OUTBOX_SWEEP_INTERVAL",
    "OUTBOX_BATCH_SIZE", "HOOKS",
)
CONNECTION_KEYS = ("URL", "OPTIONS", "SENTINEL_OPTIONS", "QUEUES", "REPLICA_ACK")
REPLICA_ACK_KEYS = ("REPLICAS", "TIMEOUT")
WORKER_KEYS = tuple(option.key for option in WORKER_OPTIONS if option.key is not None)
ADMIN_KEYS = ("MASKED_DATA_KEYS", "MASKED_PATTERNS", "LATENCY_THRESHOLD")
HOOK_KEYS = ("ENQUEUE", "RUN")
#: Job data keys whose values the admin pages mask (matched case-insensitively, as substrings).
DEFAULT_MASKED_DATA_KEYS = (
    "password", "passwd", "secret", "token", "api_key", "apikey", "authorization",
    "credential", "private_key",
)
#: Regular expressions the admin masks in free text (failure messages, tracebacks, history):
#: a pattern with groups masks its groups, one without masks its whole match.
DEFAULT_MASKED_PATTERNS = (
    # The password of a URL: redis://user:secret@host.
    r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]*:([^\s/@]+)@",
    # HTTP credentials: Authorization: Bearer <token>.
    r"\b(?:Bearer|Basic) ([A-Za-z0-9._~+/-]{8,}=*)",
    # JSON Web Tokens.
    r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    # PEM private keys (to the end of the text when cut short).
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    # AWS access key ids, GitHub, Slack and Stripe tokens.
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
)


@dataclass(frozen=True)
class ConnectionSettings:
    """One named Redis connection and the queues routed to it."""

    alias: str
    url: str
    options: Mapping[str, Any]
    queues: tuple[str, ...]
    sentinel: SentinelSettings | None = None
    #: WAIT for replicas after each put and completion (None: Redis' asynchronous replication).
    replica_ack: ReplicaAck | None = None


@dataclass(frozen=True)
class WorkerSettings:
    """Defaults for `manage.py qless_worker` (its command-line options win)."""

    queues: tuple[str, ...]
    strategy: Strategy = worker_default("strategy")
    processes: int = worker_default("processes")
    #: Jobs one worker process runs at once (1: the serial worker).
    concurrency: int = worker_default("concurrency")
    max_jobs: int | None = worker_default("max_jobs")
    max_memory_mb: int | None = worker_default("max_memory_mb")
    time_limit: float | None = worker_default("time_limit")
    shutdown_timeout: float = worker_default("shutdown_timeout")
    poll_interval: float = worker_default("poll_interval")
    #: Jobs a worker process pops ahead of the one it runs, while recent jobs are short.
    prefetch: int = worker_default("prefetch")
    #: Seconds between lease renewals of a running job; None = a third of the queue's lease.
    heartbeat_interval: float | None = worker_default("heartbeat_interval")
    #: "process": each job runs in a forked child the worker can kill (`worker.isolation`).
    isolation: Isolation = worker_default("isolation")
    #: Seconds after which a job's child is SIGKILLed; None = its time limit + a margin.
    hard_time_limit: float | None = worker_default("hard_time_limit")
    #: Resident memory (MiB) above which a job's child is SIGKILLed; None = no cap.
    job_memory_mb: int | None = worker_default("job_memory_mb")


@dataclass(frozen=True)
class AdminSettings:
    """Options of the admin pages."""

    masked_data_keys: tuple[str, ...] = DEFAULT_MASKED_DATA_KEYS
    #: Regular expressions masked in free text (checked to compile when the setting is read).
    masked_patterns: tuple[str, ...] = DEFAULT_MASKED_PATTERNS
    #: Seconds a queue's next job may wait before the overview lists the queue as stuck,
    #: unless the queue has its own threshold (set on its page); None: only those.
    latency_threshold: float | None = 300.0


@dataclass(frozen=True)
class OutboxSettings:
    """The outbox of on-commit puts (`django_qless.outbox`)."""

    #: Write on-commit puts to the outbox table in the enqueuing transaction.
    enabled: bool = True
    #: Seconds a row must be old before a sweep puts it (the commit's own put comes first).
    sweep_age: float = 5.0
    #: Seconds between two sweeps of a worker process.
    sweep_interval: float = 5.0
    #: Rows a sweep reads and puts per pass.
    batch_size: int = 500


@dataclass(frozen=True)
class QlessSettings:
    """The whole `QLESS` setting, validated."""

    connections: Mapping[str, ConnectionSettings]
    worker: WorkerSettings
    default_queue: str = "default"
    immediate: bool = False
    enqueue_on_commit: bool = True
    max_payload_bytes: int = 1_048_576
    #: Share of Redis' maxmemory above which puts are refused (None: never).
    put_memory_limit: float | None = 0.9
    heartbeat: float | None = None
    admin: AdminSettings = AdminSettings()
    #: Store every `@qless_job` return value in its completed job (else per job).
    store_results: bool = False
    #: Largest stored return value of a `@qless_job`, in bytes of UTF-8 JSON.
    result_max_bytes: int = 64 * 1024
    #: Refuse to start a worker on a Redis that can lose acknowledged puts (else warn).
    require_durable_redis: bool = False
    #: Bearer token that lets a Prometheus scraper read the metrics view (None: staff only).
    metrics_token: str | None = None
    outbox: OutboxSettings = OutboxSettings()
    #: `HOOKS`: the declared enqueue and run hooks, imported (`django_qless.hooks`).
    hooks: HookSet = HookSet()
    #: Raw `RECURRING` entries (name -> dict); django_qless.recurring validates them.
    recurring: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))


#: Every field at its default: what the reader falls back to for an absent or bad key.
DEFAULTS = QlessSettings(connections=MappingProxyType({}), worker=WorkerSettings(queues=()))
