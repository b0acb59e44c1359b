"""Several qless commands in one round trip: the worker completes a job and pops the next.

The commands are EVALSHA of the client's script, packed as RESP here and written on one
connection checked out of the client's pool; the replies are read back in order. This is
what a non-transactional redis-py pipeline does, minus its per-command machinery, which
costs more CPU than the worker's whole job loop. Script errors are translated as
`Client.call` would, but returned in place, so each command's outcome is handled on its
own and the connection stays in step with Redis. NOSCRIPT (after a Redis restart or
SCRIPT FLUSH) is raised as `ScriptMissing`: the caller then falls back to plain calls,
which load the script again. A connection error, or anything that interrupts the
exchange, drops the connection (Redis may still owe replies on it) and is raised; nothing
is retried, since a repeated `complete` or `pop` is not the same as the first.
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
    packed = pack(client.script.sha, client.now(), calls)
    replies = exchange(client.redis.connection_pool, packed, len(calls))
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


def exchange(pool: redis.ConnectionPool, packed: bytes, count: int) -> list[Any]:
    """Send `packed` on a pooled connection and read `count` replies (errors kept in place)."""
    connection = pool.get_connection()
    try:
        connection.send_packed_command([packed])  # type: ignore[no-untyped-call]
        replies: list[Any] = []
        for _ in range(count):
            try:
                replies.append(connection.read_response())
            except redis.ResponseError as exc:
                # An error reply: the connection is still in step, read on.
                replies.append(exc)
    except BaseException:
        # Replies may still be in flight; a connection with unread data must not be reused.
        connection.disconnect()  # type: ignore[no-untyped-call]
        raise
    finally:
        pool.release(connection)
    return replies


def pack(sha: str, now: float, calls: Sequence[tuple[str, Sequence[Any]]]) -> bytes:
    """The RESP bytes of one `EVALSHA sha 0 command now *args` per call."""
    head = b"$7\r\nEVALSHA\r\n" + _bulk(sha.encode()) + b"$1\r\n0\r\n"
    stamp = _bulk(_arg(now))
    parts: list[bytes] = []
    for command, args in calls:
        parts.append(b"*%d\r\n" % (len(args) + 5))
        parts += (head, _bulk(command.encode()), stamp)
        parts += [_bulk(_arg(value)) for value in args]
    return b"".join(parts)


def _bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _arg(value: Any) -> bytes:
    """A command argument as redis-py's encoder writes it (numbers by `repr`)."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value).encode()
    raise redis.DataError(f"invalid argument type {type(value).__name__} for a script call")
