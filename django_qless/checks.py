"""System checks: the `QLESS` setting and the registered jobs (no network I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning

from . import conf
from .connection import alias_for_queue
from .registry import registry

TAG = "django_qless"


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
