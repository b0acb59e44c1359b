"""The backend's `OPTIONS`: the qless settings Django's Tasks API has no word for.

Keys (all optional):

- ``CONNECTION``: the `QLESS` connection alias to put on and read from (default: each
  queue's routing, as for `@qless_job`);
- ``RETRIES``: qless retries of a job whose lease is lost (default: qless's, 5);
- ``TAGS``: qless tags given to every job;
- ``HEARTBEAT``: seconds between lease renewals while a task runs (default: the worker's);
- ``TIME_LIMIT``: seconds a task may run before the worker stops it (default: the worker's);
- ``RESULT_MAX_BYTES``: largest stored return value, as UTF-8 JSON (default 64 KiB);
- ``ENQUEUE_ON_COMMIT``: put after the transaction commits (default: `QLESS`'s own rule).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..core import InvalidArgumentError, validation

#: Default `RESULT_MAX_BYTES`: return values are kept in Redis as long as completed jobs are.
DEFAULT_RESULT_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class BackendOptions:
    """A backend's validated `OPTIONS`."""

    connection: str | None = None
    retries: int | None = None
    tags: tuple[str, ...] = ()
    heartbeat: float | None = None
    time_limit: float | None = None
    result_max_bytes: int = DEFAULT_RESULT_MAX_BYTES
    enqueue_on_commit: bool | None = None


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A check that lets None through."""
    return lambda value: None if value is None else check(value)


def _boolean(value: Any) -> bool | None:
    """True, False or None."""
    if value is not None and not isinstance(value, bool):
        raise InvalidArgumentError(f"must be True, False or None, got {value!r}")
    return value


#: OPTIONS key -> (field of `BackendOptions`, check returning the value to keep).
_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "CONNECTION": ("connection", _optional(lambda v: validation.label(v, "connection alias"))),
    "RETRIES": ("retries", _optional(lambda v: validation.integer(v, "retries", minimum=0))),
    "TAGS": ("tags", lambda v: tuple(validation.labels(v, "tag"))),
    "HEARTBEAT": ("heartbeat", _optional(lambda v: float(validation.positive(v, "heartbeat")))),
    "TIME_LIMIT": (
        "time_limit", _optional(lambda v: float(validation.positive(v, "time limit")))
    ),
    "RESULT_MAX_BYTES": (
        "result_max_bytes", lambda v: validation.integer(v, "result size", minimum=1)
    ),
    "ENQUEUE_ON_COMMIT": ("enqueue_on_commit", _boolean),
}


def parse_options(alias: str, raw: Any) -> BackendOptions:
    """Validate `TASKS[alias]['OPTIONS']`; `ImproperlyConfigured` names the bad key."""
    where = f"TASKS[{alias!r}]['OPTIONS']"
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured(f"{where} must be a dict, got {type(raw).__name__}")
    unknown = sorted(str(key) for key in raw if key not in _KEYS)
    if unknown:
        raise ImproperlyConfigured(
            f"{where} has unknown keys {', '.join(unknown)} (known: {', '.join(_KEYS)})"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name, check = _KEYS[key]
        try:
            values[name] = check(value)
        except (InvalidArgumentError, TypeError) as exc:
            raise ImproperlyConfigured(f"{where}[{key!r}]: {exc}") from exc
    return BackendOptions(**values)


def parse_queues(alias: str, queues: Any) -> None:
    """Check every name in `TASKS[alias]['QUEUES']` is a qless queue name."""
    for queue in queues:
        try:
            validation.queue_name(queue)
        except InvalidArgumentError as exc:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]['QUEUES']: {exc}") from exc
