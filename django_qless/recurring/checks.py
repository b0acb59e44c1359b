"""System check messages for the declared recurring schedules (no network I/O)."""

from __future__ import annotations

from django.core.checks import CheckMessage, Error

from .declarations import collect


def recurring_messages() -> list[CheckMessage]:
    """One error per schedule that cannot be resolved (unknown job, bad timing or option)."""
    return [
        Error(
            f"{problem.key} {problem.message}",
            hint="`manage.py qless_recur` refuses to write anything until this is fixed",
            obj=problem.key,
            id=problem.id,
        )
        for problem in collect().problems
    ]
