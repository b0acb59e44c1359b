"""One script command in one round trip, without redis-py's per-command machinery.

redis-py's `Script.__call__` -> `execute_command` costs the client about as much CPU as a
put's own work (argument processing, observability hooks, retry wrappers); here the
call (EVALSHA, or FCALL of the function library) is packed once (`batch.pack`), written on
a connection and its reply read back and decoded by `replies.decode`, as `Batch` does for
several. Anything unusual goes the ordinary way, `QlessScript.__call__`, which has every
recovery: NOSCRIPT or a missing library (nothing ran: it loads what is missing and calls
again) and a connection error (redis-py's own retry policy
sends the command again, as it would have anyway).

The connection is the client's `Slot`: one connection kept out of the pool for this path,
used by one thread at a time (another thread meanwhile checks one out of the pool).
Checking a connection out and back costs 13-16 us of CPU, mostly the pool's poll for
unread data; a kept connection needs no such check, since every exchange reads its reply
whole or drops the connection. A dead one (Redis restarted) fails on the exchange itself,
before the command ran, and the command then goes the ordinary way.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import redis
from redis.connection import ConnectionPool

from .batch import pack
from .commands import Command
from .exceptions import ScriptNotLoadedError
from .replies import decode

if TYPE_CHECKING:
    from .client import Client

#: What makes the lean path hand a command to redis-py: the link, not the command, failed.
_LINK_ERRORS = (redis.ConnectionError, redis.TimeoutError, OSError)


class Slot:
    """The connection a client keeps for single puts, and who may use it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: Any = None
        #: The pool and process the connection came from: a fork, or a client given a new
        #: pool, checks out a new one (the child must never write on its parent's socket).
        self.pool: ConnectionPool | None = None
        self.pid = 0

    def take(self, pool: ConnectionPool) -> Any:
        """The kept connection, checked out of `pool` the first time (caller holds `lock`)."""
        if self.connection is None or self.pool is not pool or self.pid != os.getpid():
            self.connection = pool.get_connection()
            self.pool, self.pid = pool, os.getpid()
        return self.connection

    def drop(self) -> None:
        """Give the kept connection back, closed (caller holds `lock`)."""
        connection, pool = self.connection, self.pool
        self.connection = None
        if connection is not None and pool is not None and self.pid == os.getpid():
            connection.disconnect()
            pool.release(connection)


def run(client: Client, command: Command) -> Any:
    """Run `command` on `client`'s script; the decoded reply, script errors raised typed."""
    slot = client.slot
    pool = client.redis.connection_pool
    if slot.lock.acquire(blocking=False):
        try:
            try:
                connection = slot.take(pool)
            except _LINK_ERRORS:
                return _fallback(client, command)
            reply = _exchange(client, command, connection, slot.drop)
        finally:
            slot.lock.release()
    else:  # another thread has the kept connection: one from the pool, as redis-py would
        try:
            connection = pool.get_connection()
        except _LINK_ERRORS:
            return _fallback(client, command)
        try:
            reply = _exchange(client, command, connection, connection.disconnect)
        finally:
            pool.release(connection)
    if reply is _FAILED:
        return _fallback(client, command)
    value = decode(command.name, reply)
    if isinstance(value, ScriptNotLoadedError):
        # Nothing ran: the ordinary call loads what was missing and calls again.
        return client.script(command.name, client.now(), *command.args, missing=value)
    if isinstance(value, Exception):
        if value is reply:
            raise value
        raise value from reply  # as `QlessScript` raises it: Redis' own error as the cause
    return value


#: `_exchange`'s answer when the link failed.
_FAILED = object()


def _exchange(client: Client, command: Command, connection: Any, drop: Any) -> Any:
    """Write the call and read its reply (an error reply returned, not raised); on a
    link error `drop()` the connection and return `_FAILED`."""
    try:
        connection.send_packed_command([pack(client.script, client.now(), [command])])
        try:
            return connection.read_response()
        except redis.ResponseError as exc:
            return exc
    except _LINK_ERRORS:
        drop()  # a reply may still be owed on it
        return _FAILED
    except BaseException:
        drop()
        raise


def _fallback(client: Client, command: Command) -> Any:
    """The ordinary call, with redis-py's script loading and retries."""
    return client.script(command.name, client.now(), *command.args)
