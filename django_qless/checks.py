"""System checks: the `QLESS` setting, the registered jobs, and what Redis holds.

The settings and job checks do no network I/O. The lease check reads each connection's
shared qless configuration, and the deploy check (`check --deploy`) its persistence
settings; an unreachable Redis is a warning there, never an error, so `manage.py check`
keeps working without Redis. Both are skipped in immediate mode, which needs no Redis.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis
from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning

from . import conf
from .connection import alias_for_queue, get_client
from .core import QlessError
from .core.persistence import read_persistence
from .registry import registry

TAG = "django_qless"
#: Seconds the checks that read Redis wait for an answer before warning instead.
CHECK_DEADLINE = 3.0

T = TypeVar("T")


@register(TAG)
def check_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """One error per malformed key of `QLESS`, each naming the key."""
    return [
        Error(f"{problem.key} {problem.message}", obj="settings.QLESS", id=problem.id)
        for problem in conf.problems()
    ]


@register(TAG)
def check_jobs(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Registered jobs must name configured connections and a consistent queue routing."""
    if conf.problems():
        return []  # check_settings reports those; routing cannot be judged without settings
    settings = conf.get_settings()
    messages: list[CheckMessage] = []
    for defn in registry.all():
        queue = defn.queue or settings.default_queue
        if defn.connection is None:
            continue
        if defn.connection not in settings.connections:
            messages.append(Error(
                f"job {defn.name!r} uses connection {defn.connection!r}, which is not in "
                "QLESS['CONNECTIONS']",
                hint=f"configured: {', '.join(settings.connections)}",
                obj=defn.name, id="django_qless.E010",
            ))
        elif alias_for_queue(queue) != defn.connection:
            messages.append(CheckWarning(
                f"job {defn.name!r} puts queue {queue!r} on connection {defn.connection!r}, "
                f"but QLESS routes that queue to {alias_for_queue(queue)!r}",
                hint="workers look for a queue on the connection it is routed to; list the "
                "queue in that connection's QUEUES instead of passing connection=",
                obj=defn.name, id="django_qless.W001",
            ))
    return messages


@register(TAG)
def check_recurring(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Declared recurring schedules: registered job, valid timing, known options."""
    if conf.problems():
        return []  # check_settings reports those
    from .recurring.checks import recurring_messages  # noqa: PLC0415 - keeps checks.py light

    return recurring_messages()


@register(TAG)
def check_lease_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Unsafe leases, grace period or concurrency caps in each connection's qless config."""
    messages: list[CheckMessage] = []
    for alias in _redis_aliases():
        try:
            found = within_deadline(get_client(alias).config.lease_problems)
        except (redis.RedisError, QlessError, TimeoutError) as exc:
            messages.append(_unreachable(alias, "qless configuration", exc))
            continue
        messages += [CheckWarning(
            problem, obj=f"QLESS connection {alias!r}", id="django_qless.W002",
            hint="workers refuse to start, and running ones stop popping, until it is "
            "fixed: set it with Client.config.put(), or unset it for the default",
        ) for problem in found]
    return messages


@register(TAG, deploy=True)
def check_redis_persistence(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Redis must keep acknowledged puts across a crash (an error with REQUIRE_DURABLE_REDIS)."""
    messages: list[CheckMessage] = []
    required = bool(_redis_aliases()) and conf.get_settings().require_durable_redis
    for alias in _redis_aliases():
        try:
            read = functools.partial(read_persistence, get_client(alias).redis)
            problem = within_deadline(read).problem
        except (redis.RedisError, TimeoutError) as exc:
            messages.append(_unreachable(alias, "persistence settings", exc))
            continue
        if problem is None:
            continue
        kind = Error if required else CheckWarning
        messages.append(kind(
            problem, obj=f"QLESS connection {alias!r}",
            id="django_qless.E050" if required else "django_qless.W004",
            hint="workers refuse to start while QLESS['REQUIRE_DURABLE_REDIS'] is on"
            if required else "set QLESS['REQUIRE_DURABLE_REDIS'] = True to make workers "
            "refuse such a Redis",
        ))
    return messages


def within_deadline(read: Callable[[], T]) -> T:
    """`read()` in a daemon thread; `TimeoutError` when it has not answered in time.

    A Redis host that drops packets would otherwise hang every management command that
    runs the system checks for as long as TCP retries (minutes without a socket timeout).
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(read())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="django_qless-check", daemon=True)
    thread.start()
    thread.join(CHECK_DEADLINE)
    if failure:
        raise failure[0]
    if not outcome:
        raise TimeoutError(f"no answer within {CHECK_DEADLINE:g} s")
    return outcome[0]


def _redis_aliases() -> list[str]:
    """The connections to look at: none with bad settings or in immediate mode."""
    if conf.problems():
        return []  # check_settings reports those
    settings = conf.get_settings()
    return [] if settings.immediate else list(settings.connections)


def _unreachable(alias: str, what: str, exc: Exception) -> CheckMessage:
    """The warning for a Redis that could not be read (never an error: Redis may be down)."""
    return CheckWarning(
        f"cannot read the {what} of QLESS connection {alias!r}: {exc}",
        obj=f"QLESS connection {alias!r}", id="django_qless.W003",
        hint="checked again by each worker at start-up",
    )
