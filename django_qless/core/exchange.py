"""One script command in one round trip, without redis-py's per-command machinery.

redis-py's `Script.__call__` -> `execute_command` costs the client about as much CPU as a
put's own work (argument processing, observability hooks, retry wrappers); here the
EVALSHA is packed once (`batch.pack`), written on a connection checked out of the client's
pool, and its reply read back and decoded by `replies.decode`, as `Batch` does for
several. Anything unusual goes the ordinary way, `QlessScript.__call__`, which has every
recovery: NOSCRIPT (nothing ran: it loads the script and calls again) and a connection
error (redis-py's own retry policy sends the command again, as it would have anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import redis

from .batch import pack
from .commands import Command
from .exceptions import ScriptNotLoadedError
from .replies import decode

if TYPE_CHECKING:
    from .client import Client

#: What makes the lean path hand a command to redis-py: the link, not the command, failed.
_LINK_ERRORS = (redis.ConnectionError, redis.TimeoutError, OSError)


def run(client: Client, command: Command) -> Any:
    """Run `command` on `client`'s script; the decoded reply, script errors raised typed."""
    pool = client.redis.connection_pool
    try:
        connection = pool.get_connection()
    except _LINK_ERRORS:
        return client.script(command.name, client.now(), *command.args)
    try:
        connection.send_packed_command(  # type: ignore[no-untyped-call]
            [pack(client.script.sha, client.now(), [command])]
        )
        try:
            reply: Any = connection.read_response()
        except redis.ResponseError as exc:
            reply = exc
    except _LINK_ERRORS:
        connection.disconnect()  # type: ignore[no-untyped-call]  # a reply may still be owed
        pool.release(connection)
        return client.script(command.name, client.now(), *command.args)
    except BaseException:
        connection.disconnect()  # type: ignore[no-untyped-call]
        pool.release(connection)
        raise
    pool.release(connection)
    value = decode(command.name, reply)
    if isinstance(value, ScriptNotLoadedError):
        # Nothing ran: redis-py's Script loads the script and calls again.
        return client.script(command.name, client.now(), *command.args)
    if isinstance(value, Exception):
        if value is reply:
            raise value
        raise value from reply  # as `QlessScript` raises it: Redis' own error as the cause
    return value
