"""Several qless commands in one round trip: the worker completes a job and pops the next.

The commands are EVALSHA of the client's script, packed as RESP here and written on one
connection of the client's pool; the replies are read back in order. This is what a
non-transactional redis-py pipeline does, minus its per-command machinery, which costs
more CPU than the worker's whole job loop. Script errors are translated as `Client.call`
would, but returned in place, so each command's outcome is handled on its own and the
connection stays in step with Redis. NOSCRIPT (after a Redis restart or SCRIPT FLUSH) is
raised as `ScriptMissing`: the caller then falls back to plain calls, which load the
script again. A connection error, or anything that interrupts the exchange, drops the
connection (Redis may still owe replies on it) and is raised; nothing is retried, since
a repeated `complete` or `pop` is not the same as the first.

`RoundTrips` keeps its connection between round trips (checking a connection out of the
pool costs about as much as packing and parsing together); before each reuse it makes
the same check the pool makes at checkout (no unread data, not closed by the server).
The worker gives it back to the pool whenever it goes idle and at shutdown.

`send()` writes calls without waiting for their replies, so Redis runs a completion while
the worker already runs its next job. Each reply goes to the `Reply` given with its call,
in order: at once, in whichever thread reads it, or, for `deferred` ones, at the next
`collect()` (the worker thread, where signals are sent). Reads and writes hold `lock`, so
the monitor thread can read replies ahead while the worker thread runs a long job.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from redis.connection import Connection

from ..core import Client
from ..core.exceptions import ScriptError
from ..core.script import is_script_error, translate

Calls = Sequence[tuple[str, Sequence[Any]]]


class ScriptMissing(Exception):  # noqa: N818 - a signal to fall back, not an error
    """Redis does not have the script: nothing in the batch ran."""


@dataclass
class Reply:
    """Where the reply of one sent call goes: the decoded value or the error, as an instance."""

    handle: Callable[[Any], None]
    #: Handled at the next `collect()` rather than by the thread that reads it.
    deferred: bool = False


@dataclass
class _Pending:
    """A sent call whose reply is not handled yet."""

    command: str
    reply: Reply


class RoundTrips:
    """Batches of script calls for one thread, on a connection kept until `release()`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.pool = client.redis.connection_pool
        self._connection: Connection | None = None
        #: Sent calls whose replies are unread, oldest first.
        self._unread: deque[_Pending] = deque()
        #: Read replies of deferred calls, waiting for `collect()`.
        self._ready: deque[tuple[Reply, Any]] = deque()
        self.lock = threading.RLock()

    def call_many(self, calls: Calls) -> list[Any]:
        """Run `(command, args)` pairs in one round trip; script errors are returned in place,
        any other error (NOSCRIPT as `ScriptMissing`, a lost connection) is raised."""
        values: list[Any] = []
        with self.lock:
            self.read()  # answers owed from earlier sends come first
            self.send(calls, [Reply(values.append) for _ in calls])
            self.read()
        for value in values:
            if isinstance(value, Exception) and not isinstance(value, ScriptError):
                raise value
        return values

    def send(self, calls: Calls, replies: Sequence[Reply]) -> None:
        """Write `calls` now; each reply is handled by its `Reply` once read (see `read`)."""
        packed = pack(self.client.script.sha, self.client.now(), calls)
        with self.lock:
            connection = self._checkout()
            try:
                connection.send_packed_command([packed])  # type: ignore[no-untyped-call]
            except Exception as exc:
                # Lost with the connection: these calls fail like those sent before them.
                self._drop(connection, exc)
                for reply in replies:
                    self._deliver(reply, exc)
                return
            except BaseException as exc:
                self._drop(connection, exc)
                raise
            self._unread.extend(
                _Pending(command, reply) for (command, _), reply in zip(calls, replies, strict=True)
            )

    @property
    def waiting(self) -> int:
        """How many sent calls have no reply read yet."""
        return len(self._unread)

    def read(self, *, wait: bool = True, until: Callable[[], bool] | None = None) -> None:
        """Read the replies of sent calls in order: all, or those already here when not `wait`.

        Stops early once `until()` is true. A lost connection fails every unread call.
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
                self._deliver(pending.reply, decode(pending.command, value))
                if until is not None and until():
                    return

    def collect(self) -> None:
        """Hand the read replies of deferred calls to their handlers, in this thread."""
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

    def _deliver(self, reply: Reply, value: Any) -> None:
        """Handle a reply now, or keep it for `collect()`."""
        if reply.deferred:
            self._ready.append((reply, value))
        else:
            reply.handle(value)

    def _drop(self, connection: Connection, exc: BaseException) -> None:
        """The connection is out of step or gone: every unread call gets `exc` as its reply."""
        connection.disconnect()  # type: ignore[no-untyped-call]
        self._connection = None
        self.pool.release(connection)
        unread, self._unread = self._unread, deque()
        for pending in unread:
            self._deliver(pending.reply, exc)

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


def call_many(client: Client, calls: Calls) -> list[Any]:
    """One round trip on a connection checked out for it alone."""
    trips = RoundTrips(client)
    try:
        return trips.call_many(calls)
    finally:
        trips.release()


def decode(command: str, reply: Any) -> Any:
    """One reply decoded; every error returned in place as an instance (script errors typed,
    NOSCRIPT as `ScriptMissing`)."""
    if isinstance(reply, redis.exceptions.NoScriptError):
        return ScriptMissing(str(reply))
    if isinstance(reply, redis.ResponseError) and is_script_error(reply):
        return translate(command, reply)
    if isinstance(reply, bytes):
        return reply.decode("utf-8")
    return reply


_HEADS: dict[str, bytes] = {}


def pack(sha: str, now: float, calls: Calls) -> bytes:
    """The RESP bytes of one `EVALSHA sha 0 command now *args` per call."""
    head = _HEADS.get(sha)
    if head is None:
        head = _HEADS[sha] = b"$7\r\nEVALSHA\r\n" + _bulk(sha.encode()) + b"$1\r\n0\r\n"
    stamp = _bulk(repr(float(now)).encode())
    parts: list[bytes] = []
    for command, args in calls:
        parts.append(b"*%d\r\n%s%s%s" % (len(args) + 5, head, _bulk(command.encode()), stamp))
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
