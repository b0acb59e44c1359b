"""A module outside every installed app: the resolver must never import it."""

from __future__ import annotations

from tests.tasks.compat import task


@task
def outside() -> None:
    """Would be a valid task, but its module is not in an installed app."""
