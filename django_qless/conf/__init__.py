"""The `QLESS` setting: read lazily, merged with defaults into frozen dataclasses, cached.

`schema` holds the known keys, defaults and dataclasses, `worker_table` the worker options
(each declared once for both `QLESS['WORKER']` and `qless_worker`), and `reader` the
validation and the cache, dropped whenever Django announces a change of `QLESS`
(`override_settings`, the `settings` fixture) so the next `get_settings()` reads it again.
"""

from __future__ import annotations

from .reader import (
    Problem,
    Reader,
    check_routing,
    clear_cache,
    get_settings,
    parse,
    problems,
    read_admin,
    read_connection,
    read_connections,
    read_memory_limit,
    read_worker,
)
from .schema import (
    ADMIN_KEYS,
    CONNECTION_KEYS,
    DEFAULT_ALIAS,
    DEFAULT_MASKED_DATA_KEYS,
    DEFAULT_MASKED_PATTERNS,
    DEFAULT_URL,
    DEFAULTS,
    HOOK_KEYS,
    TOP_KEYS,
    WORKER_KEYS,
    AdminSettings,
    ConnectionSettings,
    QlessSettings,
    WorkerSettings,
)
from .worker_table import (
    STRATEGIES,
    WORKER_OPTIONS,
    Strategy,
    WorkerOption,
    worker_default,
    worker_option,
)

__all__ = [
    "ADMIN_KEYS",
    "CONNECTION_KEYS",
    "DEFAULTS",
    "DEFAULT_ALIAS",
    "DEFAULT_MASKED_DATA_KEYS",
    "DEFAULT_MASKED_PATTERNS",
    "DEFAULT_URL",
    "HOOK_KEYS",
    "STRATEGIES",
    "TOP_KEYS",
    "WORKER_KEYS",
    "WORKER_OPTIONS",
    "AdminSettings",
    "ConnectionSettings",
    "Problem",
    "QlessSettings",
    "Reader",
    "Strategy",
    "WorkerOption",
    "WorkerSettings",
    "check_routing",
    "clear_cache",
    "get_settings",
    "parse",
    "problems",
    "read_admin",
    "read_connection",
    "read_connections",
    "read_memory_limit",
    "read_worker",
    "worker_default",
    "worker_option",
]
