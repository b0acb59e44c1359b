"""Several script calls in one round trip, falling back to one call each when Redis lacks
the script (a fresh or restarted Redis, SCRIPT FLUSH, a Redis without functions): the plain
calls load it again, and the next round trip is shared again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import Batch, Client, Command, ScriptError, ScriptNotLoadedError, call_many


def run_all(client: Client, commands: Sequence[Command], batch: Batch | None = None
            ) -> list[Any]:
    """Each command's reply, or its script error in place; a lost connection is raised.
    With `batch`, on the connection it keeps (one thread at a time), not a fresh one."""
    try:
        return batch.call_many(commands) if batch is not None else call_many(client, commands)
    except ScriptNotLoadedError:
        replies: list[Any] = []
        for command in commands:
            try:
                replies.append(client.run(command))
            except ScriptError as exc:
                replies.append(exc)
        return replies
