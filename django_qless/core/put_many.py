"""Many puts in few round trips: pipelined EVALSHA, `CHUNK` commands per round trip.

Each command is the script's own `put` (or `put.ifabsent`, `track`): other clients see
exactly the keys and events of as many single calls, in the same order. Every command is
built (and so checked) by the caller before the first is sent, and Redis' memory is
checked once for all the jobs (`QueueFullError`, nothing written). With a `ReplicaAck`,
each round trip ends with `WAIT` and too few acknowledgements raise `ReplicationError`,
as a single put does.

The script itself can still refuse a put (a dependency cycle, Redis out of memory): the
commands of that round trip after it still run, as does the round trip already sent
behind it, and no later one is sent. `PartialPutError` then says which were written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis

from . import replication
from .batch import pack
from .commands import Command
from .exceptions import PartialPutError, ScriptNotLoadedError
from .replication import ReplicaAck
from .replies import decode
from .script import script_text

if TYPE_CHECKING:
    from .client import Client

#: Commands per round trip: large enough that the round trip's cost vanishes, small enough
#: that one pipeline never holds Redis or the client's memory for long.
CHUNK = 1000
#: Seconds between the clocks of two commands of a bulk put: the smallest step that
#: still moves a waiting job's score (priority - now / 1e10) at today's timestamps.
STEP = 1e-6
#: Commands that add a job, whose size counts against Redis' memory before they are sent.
GROWING = frozenset({"put", "put.ifabsent"})


def run(client: Client, commands: Sequence[Command]) -> list[Any]:
    """Run `commands` in order, `CHUNK` per round trip; their decoded replies."""
    client.memory.check(sum([len(arg) for name, args in commands if name in GROWING
                             for arg in args if type(arg) is str]))
    replies = _exchange(client, commands)
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, ScriptNotLoadedError)]
    if missing:
        # Those did not run (Redis restarted or flushed its scripts): load it, send them.
        client.redis.script_load(script_text())
        again = _exchange(client, [commands[i] for i in missing])
        for i, reply in zip(missing, again, strict=False):
            replies[i] = reply
    if len(replies) < len(commands) or any(isinstance(reply, Exception) for reply in replies):
        raise PartialPutError(replies, len(commands))
    return replies


def _exchange(client: Client, commands: Sequence[Command]) -> list[Any]:
    """Send the chunks on one connection, the next one written before the replies of the
    one before are read, so Redis runs a chunk while the client packs and reads; stops
    sending after a chunk with a refused command. Replies (errors as instances) in order.
    """
    ack = client.replica_ack
    sha = client.script.sha
    clock = client.now()
    replies: list[Any] = []
    in_flight: deque[Sequence[Command]] = deque()
    pool = client.redis.connection_pool
    connection = pool.get_connection()
    try:
        for start in range(0, len(commands), CHUNK):
            chunk = commands[start : start + CHUNK]
            # Each job its own time, STEP apart and never going back (across chunks too):
            # jobs of equal priority are popped in the order of their put times.
            clock = max(client.now(), clock)
            packed = pack(sha, clock, chunk, STEP)
            clock += len(chunk) * STEP
            connection.send_packed_command(  # type: ignore[no-untyped-call]
                [packed + ack.packed() if ack is not None else packed]
            )
            in_flight.append(chunk)
            if len(in_flight) > 1 and not _read_chunk(connection, in_flight.popleft(), ack,
                                                      replies):
                break
        while in_flight:
            _read_chunk(connection, in_flight.popleft(), ack, replies)
    except BaseException:
        connection.disconnect()  # type: ignore[no-untyped-call]  # replies may still be owed
        raise
    finally:
        pool.release(connection)
    return replies


def _read_chunk(
    connection: Any, chunk: Sequence[Command], ack: ReplicaAck | None, replies: list[Any]
) -> bool:
    """Read one chunk's replies (and WAIT's) into `replies`; False if the script refused
    one (NOSCRIPT is no refusal: those commands are sent again once the script is loaded).
    """
    clean = True
    for name, _ in chunk:
        reply = decode(name, _read(connection))
        if isinstance(reply, Exception) and not isinstance(reply, ScriptNotLoadedError):
            clean = False
        replies.append(reply)
    if ack is not None:
        replication.settle(ack, chunk, _read(connection))
    return clean


def _read(connection: Any) -> Any:
    """One reply; an error reply is returned, not raised."""
    try:
        return connection.read_response()
    except redis.ResponseError as exc:
        return exc
