"""Several qless commands in one round trip: the worker completes a job and pops the next.

The commands go through a non-transactional redis-py pipeline as EVALSHA of the client's
script; replies are decoded and script errors translated as `Client.call` would, but
returned in place so each command's outcome is handled on its own. NOSCRIPT (after a Redis
restart or SCRIPT FLUSH) is raised as `ScriptMissing`: the caller then falls back to plain
calls, which load the script again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from ..core import Client
from ..core.script import is_script_error, translate


class ScriptMissing(Exception):  # noqa: N818 - a signal to fall back, not an error
    """Redis does not have the script: nothing in the batch ran."""


def call_many(client: Client, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
    """Run `(command, args)` pairs in one round trip; script errors are returned in place."""
    pipe = client.redis.pipeline(transaction=False)
    now = client.now()
    for command, args in calls:
        pipe.evalsha(client.script.sha, 0, command, now, *args)
    replies = pipe.execute(raise_on_error=False)
    results: list[Any] = []
    for (command, _), reply in zip(calls, replies, strict=True):
        if isinstance(reply, redis.exceptions.NoScriptError):
            raise ScriptMissing(str(reply))
        if isinstance(reply, redis.ResponseError) and is_script_error(reply):
            reply = translate(command, reply)
        elif isinstance(reply, Exception):
            raise reply
        elif isinstance(reply, bytes):
            reply = reply.decode("utf-8")
        results.append(reply)
    return results
