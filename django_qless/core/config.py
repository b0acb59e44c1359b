"""qless configuration (`ql:config`), with type checks for the keys qless itself reads."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from . import commands, keys
from . import validation as check
from .exceptions import ConfigValueError

if TYPE_CHECKING:
    from .client import Client

ConfigValue = str | int | float
#: The lease the script gives when no `heartbeat` is stored (qless-core's default).
DEFAULT_LEASE = 60

#: Keys the script reads as numbers, and the smallest value each accepts (None: any integer).
NUMERIC_KEYS: dict[str, tuple[float | None, bool]] = {
    # key: (minimum, integer only)
    "heartbeat": (1, False),
    "grace-period": (0, False),
    "stats-history": (0, True),
    "histogram-history": (0, True),
    "jobs-history": (0, False),
    "jobs-history-count": (0, True),
    "max-worker-age": (0, False),
    "max-job-history": (None, True),
    "max-pop-retry": (1, True),
}
#: Per-queue keys, matched by suffix: `<queue>-heartbeat`, `<queue>-max-concurrency`.
QUEUE_SUFFIXES: dict[str, tuple[float | None, bool]] = {
    "-heartbeat": (1, False),
    "-max-concurrency": (0, True),
}


def rule(key: str) -> tuple[float | None, bool] | None:
    """(minimum, integer-only) for a numeric key, or None for a free-form one."""
    if key in NUMERIC_KEYS:
        return NUMERIC_KEYS[key]
    for suffix, found in QUEUE_SUFFIXES.items():
        if key.endswith(suffix) and len(key) > len(suffix):
            return found
    return None


def coerce(key: str, value: object) -> ConfigValue:
    """Check a value for `key`; numeric keys accept numbers or numeric strings."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigValueError(f"config {key!r}: value must be a string or a number")
    found = rule(key)
    if found is None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigValueError(f"config {key!r}: value must be finite")
        return value
    minimum, integer_only = found
    try:
        number = float(value)
    except ValueError:
        raise ConfigValueError(f"config {key!r} must be a number, got {value!r}") from None
    if not math.isfinite(number) or (integer_only and not number.is_integer()):
        kind = "an integer" if integer_only else "a finite number"
        raise ConfigValueError(f"config {key!r} must be {kind}, got {value!r}")
    if minimum is not None and number < minimum:
        raise ConfigValueError(f"config {key!r} must be >= {minimum:g}, got {value!r}")
    return int(number) if number.is_integer() else number


class Config:
    """Read and write qless settings; numeric keys come back as int/float."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def get(self, key: str) -> ConfigValue | None:
        """The value of `key` (its default if unset); None if it has neither."""
        value = self.client.run(commands.config_get(key))
        return None if value is None else coerce(key, value)

    def all(self) -> dict[str, ConfigValue]:
        """Every default, overlaid with what is stored, checked against each key's rule."""
        return {key: coerce(key, value) for key, value in self._stored().items()}

    def as_text(self) -> dict[str, str]:
        """Every value as text, sorted by key, unchecked.

        For showing: a value another client wrote is shown even where `all()` would
        refuse it (7.0 reads as 7).
        """
        return {key: _plain(value) for key, value in sorted(self._stored().items())}

    def overridden(self) -> set[str]:
        """The keys stored in `ql:config` (the others show their defaults)."""
        return {key.decode() if isinstance(key, bytes) else str(key)
                for key in self.client.redis.hkeys(keys.CONFIG)}

    def _stored(self) -> dict[str, object]:
        """The `config.get` object: defaults overlaid with stored values, as replied."""
        stored = json.loads(self.client.run(commands.config_get())) or {}
        return {str(key): value for key, value in stored.items()}

    def set(self, key: str, value: ConfigValue) -> None:
        """Store a value (checked first for the keys qless reads as numbers)."""
        checked = coerce(check.label(key, "config key"), value)
        self.client.run(commands.config_set(key, checked))

    def unset(self, key: str) -> None:
        """Remove a stored value, so the default applies again."""
        self.client.run(commands.config_unset(key))

    def put(self, key: str, value: ConfigValue | None) -> None:
        """`set`, or `unset` when value is None."""
        if value is None:
            self.unset(key)
        else:
            self.set(key, value)

    def lease_problems(self, queues: Iterable[str] | None = None) -> list[str]:
        """What in the stored lease settings is unsafe for `queues` (None: every queue)."""
        return lease_problems(self.as_text(), queues)


def lease_problems(values: Mapping[str, str], queues: Iterable[str] | None = None
                   ) -> list[str]:
    """Unsafe lease settings among `values` (`Config.as_text()`), one line each.

    Another qless client may store what `Config.set` refuses (qless's own tests store
    negative leases to force expiry). A lease of 0 s or less makes every lock expire at
    once, so several workers hold one job; a negative grace period or concurrency cap is
    as meaningless to the script. `queues` None judges every queue the values name.
    """
    names = sorted(_queues_named(values)) if queues is None else list(queues)
    keys = ["heartbeat"] if queues is None else []
    keys += [_lease_key(values, name) for name in names]
    found = [_judge(values, key, "lease", exclusive=True) for key in dict.fromkeys(keys)]
    found.append(_judge(values, "grace-period", "grace period", exclusive=False))
    found += [_judge(values, f"{name}-max-concurrency", "concurrency cap", exclusive=False)
              for name in names]
    return [problem for problem in found if problem is not None]


def lease_for(values: Mapping[str, str], queue: str) -> float | None:
    """The lease (seconds) the script gives `queue`'s locks by `values` (None: unusable)."""
    try:
        lease = float(values.get(_lease_key(values, queue), DEFAULT_LEASE))
    except ValueError:
        return None
    return lease if math.isfinite(lease) and lease > 0 else None


def _queues_named(values: Mapping[str, str]) -> set[str]:
    """Queues with a `<queue>-heartbeat` or `<queue>-max-concurrency` value."""
    return {key[: -len(suffix)] for key in values for suffix in QUEUE_SUFFIXES
            if key.endswith(suffix) and len(key) > len(suffix)}


def _lease_key(values: Mapping[str, str], queue: str) -> str:
    """The key the script reads a queue's lease from: its own, else the global one."""
    own = f"{queue}-heartbeat"
    return own if own in values else "heartbeat"


def _judge(values: Mapping[str, str], key: str, what: str, *, exclusive: bool) -> str | None:
    """The problem with one stored value (absent is fine: the script's default applies)."""
    text = values.get(key)
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    bound = "> 0" if exclusive else ">= 0"
    if not math.isfinite(number):
        return f"qless config {key} = {text!r}: the {what} must be a number {bound}"
    if number < 0 or (exclusive and number == 0):
        return f"qless config {key} = {text}: the {what} must be {bound}"
    return None



def _plain(value: object) -> str:
    """A config value as text (integers without a fraction)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
