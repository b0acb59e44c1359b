"""Several script commands in one round trip: the worker completes a job and pops the next.

The commands are calls of the client's script (EVALSHA, or FCALL of its function library
for the per-job commands: `QlessScript.head`), packed as RESP here and written on one
connection of the client's pool; the replies are read back in order and decoded by
`replies.decode`, as for single calls, but errors are returned in place, so each command's
outcome is handled on its own and the connection stays in step with Redis. This is what
a non-transactional redis-py pipeline does, minus its per-command machinery, which costs
more CPU than the worker's whole job loop. NOSCRIPT (after a Redis restart or SCRIPT
FLUSH) or a missing library is raised by `call_many` as `ScriptNotLoadedError`: the caller
then falls back to plain calls, which load it again. A connection error, or anything that interrupts
the exchange, drops the connection (Redis may still owe replies on it) and is raised;
nothing is retried, since a repeated `complete` or `pop` is not the same as the first.

`Batch` keeps its connection between round trips (checking a connection out of the pool
costs about as much as packing and parsing together); before each reuse it makes the same
check the pool makes at checkout (no unread data, not closed by the server). Its owner
gives it back to the pool whenever it goes idle and at shutdown.

`send()` writes commands without waiting for their replies, so Redis runs a completion
while the worker already runs its next job. Each reply goes to the `Reply` given with its
command, in order: at once, in whichever thread reads it, or, for `deferred` ones, at the
next `collect()` (the thread that owns the batch). Reads and writes hold `lock`, so
another thread can read replies ahead while the owner is busy.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import redis
from redis.connection import Connection

from . import replication
from .commands import Command
from .exceptions import ScriptError
from .replies import decode

if TYPE_CHECKING:
    from .client import Client
    from .script import QlessScript


@dataclass
class Reply:
    """Where the reply of one sent command goes: the decoded value or the error, as an instance."""

    handle: Callable[[Any], None]
    #: Handled at the next `collect()` rather than by the thread that reads it.
    deferred: bool = False


@dataclass
class _Pending:
    """A sent command whose reply is not handled yet."""

    command: str
    reply: Reply


class Batch:
    """Script commands sent together, for one owner thread, on a connection kept until
    `release()`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.pool = client.redis.connection_pool
        self._connection: Connection | None = None
        #: Sent commands whose replies are unread, oldest first.
        self._unread: deque[_Pending] = deque()
        #: Read replies of deferred commands, waiting for `collect()`.
        self._ready: deque[tuple[Reply, Any]] = deque()
        self.lock = threading.RLock()

    def call_many(self, commands: Sequence[Command]) -> list[Any]:
        """Run `commands` in one round trip; script errors are returned in place, any other
        error (NOSCRIPT as `ScriptNotLoadedError`, a lost connection) is raised."""
        values: list[Any] = []
        with self.lock:
            self.read()  # answers owed from earlier sends come first
            self.send(commands, [Reply(values.append) for _ in commands])
            self.read()
        for value in values:
            if isinstance(value, Exception) and not isinstance(value, ScriptError):
                raise value
        return values

    def send(self, commands: Sequence[Command], replies: Sequence[Reply]) -> None:
        """Write `commands` now; each reply is handled by its `Reply` once read (see `read`)."""
        packed = pack(self.client.script, self.client.now(), commands)
        pending = [
            _Pending(name, reply) for (name, _), reply in zip(commands, replies, strict=True)
        ]
        ack = self.client.replica_ack
        if ack is not None and replication.wanted(ack, commands):
            # Last, so the pops' replies are not held up by the wait for the replicas.
            packed += ack.packed()
            report = partial(replication.report, ack, tuple(commands))
            pending.append(_Pending("WAIT", Reply(report)))
        with self.lock:
            connection = self._checkout()
            try:
                connection.send_packed_command([packed])  # type: ignore[no-untyped-call]
            except Exception as exc:
                # Lost with the connection: these fail like the commands sent before them.
                self._drop(connection, exc)
                for reply in replies:
                    self.deliver(reply, exc)
                return
            except BaseException as exc:
                self._drop(connection, exc)
                raise
            self._unread.extend(pending)

    @property
    def waiting(self) -> int:
        """How many sent commands have no reply read yet."""
        return len(self._unread)

    def read(self, *, wait: bool = True, until: Callable[[], bool] | None = None) -> None:
        """Read the replies of sent commands in order: all, or those already here when not
        `wait`. Stops early once `until()` is true. A lost connection fails every unread one.
        """
        with self.lock:
            connection = self._connection
            while self._unread and connection is not None:
                try:
                    if not wait and not connection.can_read(timeout=0):
                        return
                    try:
                        value: Any = connection.read_response()
                    except redis.ResponseError as exc:
                        value = exc
                except BaseException as exc:
                    self._drop(connection, exc)
                    raise
                pending = self._unread.popleft()
                self.deliver(pending.reply, decode(pending.command, value))
                if until is not None and until():
                    return

    def collect(self) -> None:
        """Hand the read replies of deferred commands to their handlers, in this thread."""
        while True:
            with self.lock:
                if not self._ready:
                    return
                reply, value = self._ready.popleft()
            reply.handle(value)

    @property
    def holding(self) -> bool:
        """True while a connection is checked out of the pool."""
        return self._connection is not None

    def release(self) -> None:
        """Read and handle every reply, then give the connection back to the pool."""
        with self.lock:
            try:
                self.read()
            finally:
                connection, self._connection = self._connection, None
                if connection is not None:
                    self.pool.release(connection)
        self.collect()

    def deliver(self, reply: Reply, value: Any) -> None:
        """Handle a reply now, or keep it for `collect()`."""
        if reply.deferred:
            self._ready.append((reply, value))
        else:
            reply.handle(value)

    def _drop(self, connection: Connection, exc: BaseException) -> None:
        """The connection is out of step or gone: every unread command gets `exc` as its reply."""
        connection.disconnect()  # type: ignore[no-untyped-call]
        self._connection = None
        self.pool.release(connection)
        unread, self._unread = self._unread, deque()
        for pending in unread:
            self.deliver(pending.reply, exc)

    def _checkout(self) -> Connection:
        """The kept connection if it is still clean, else one from the pool."""
        connection = self._connection
        if connection is None:
            connection = self._connection = self.pool.get_connection()
            return connection
        if self._unread:
            return connection  # replies are owed on it: unread data is expected
        try:
            # Unread data or EOF: the server closed it, or something is out of step.
            dirty = connection.can_read()
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            dirty = True
        if dirty:
            connection.disconnect()  # type: ignore[no-untyped-call]  # reconnects on send
        return connection


def call_many(client: Client, commands: Sequence[Command]) -> list[Any]:
    """One round trip on a connection checked out for it alone."""
    batch = Batch(client)
    try:
        return batch.call_many(commands)
    finally:
        batch.release()


def pack(script: QlessScript, now: float, commands: Sequence[Command], step: float = 0.0) -> bytes:
    """The RESP bytes of one `EVALSHA sha 0 name now *args` (or `FCALL library 0 ...`, as
    `script.head` says) per command; with `step`, the i-th command's clock is `now + i * step`."""
    stamp = _bulk(repr(float(now)).encode())
    parts: list[bytes] = []
    for index, (name, args) in enumerate(commands):
        if step:
            stamp = _bulk(repr(float(now + index * step)).encode())
        parts.append(b"*%d\r\n%s%s%s" % (len(args) + 5, script.head(name), _bulk(name.encode()),
                                          stamp))
        for value in args:
            data = value.encode() if type(value) is str else _arg(value)
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _arg(value: Any) -> bytes:
    """A command argument as redis-py's encoder writes it (numbers by `repr`)."""
    kind = type(value)
    if kind is str:
        return value.encode()  # type: ignore[no-any-return]
    if kind is int or kind is float:
        return repr(value).encode()
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value).encode()
    raise redis.DataError(f"invalid argument type {kind.__name__} for a script call")
