"""Many puts in few round trips: pipelined script calls, about `CHUNK` puts per round trip.

Runs of plain puts without dependencies go as the script's `put.many` extension, `GROUP`
puts per call: each put writes exactly what a single `put` writes, with the same events,
and a refused call writes none of its puts. Anything else (`put.ifabsent`, `track`, a put
with dependencies) goes as its own call. Every command is built (and so checked) by the
caller before the first is sent, and Redis' memory is checked once for all the jobs
(`QueueFullError`, nothing written). With a `ReplicaAck`, each round trip ends with `WAIT`
and too few acknowledgements raise `ReplicationError`, as a single put does: at the first
round trip short of them (the one already sent behind it is written too, none later).

The script can still refuse a call the caller could not check (a dependency cycle, Redis
out of memory): the calls of that round trip after it still run, as does the round trip
already sent behind it, and no later one is sent. `PartialPutError` then says, per
command, what was written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import redis

from . import replication
from .batch import pack
from .commands import Command
from .exceptions import PartialPutError, ScriptNotLoadedError
from .replication import ReplicaAck
from .replies import decode

if TYPE_CHECKING:
    from .client import Client
    from .script import QlessScript

_pack_command: Callable[[tuple[Any, ...]], bytes] | None
try:
    from hiredis import pack_command as _pack_command
except ImportError:  # hiredis is optional: redis-py works without it
    _pack_command = None

#: Puts per round trip: one `put.many` call. Two round trips are in flight, so Redis runs
#: one while the client packs the next; with 1,000 a batch of 1,000 went as one round trip
#: (nothing overlapped) and Redis spent more per put on the larger buffers: bulk enqueue of
#: batches of 1,000 went from ~16,000 to ~20,000 puts/s and Redis CPU per put 34 -> 25 us.
CHUNK = 100
#: Seconds between the clocks of two commands of a bulk put: the smallest step that
#: still moves a waiting job's score (priority - now / 1e10) at today's timestamps.
STEP = 1e-6
#: Puts per `put.many` call: enough that the call's own cost (~6 us of script setup) is
#: spread thin, few enough that one call holds Redis for a few milliseconds at most.
GROUP = 100
#: Commands that add a job, whose size counts against Redis' memory before they are sent.
GROWING = frozenset({"put", "put.ifabsent"})


def run(client: Client, commands: Sequence[Command]) -> list[Any]:
    """Run `commands` in order, about `CHUNK` puts per round trip; their decoded replies."""
    client.memory.check(sum([len(arg) for name, args in commands if name in GROWING
                             for arg in args if type(arg) is str]))
    calls, sizes = group(commands)
    answered = _exchange(client, calls, sizes)
    missing = [i for i, reply in enumerate(answered) if isinstance(reply, ScriptNotLoadedError)]
    if missing:
        # Those did not run (Redis restarted or flushed its scripts): load it, send them.
        client.script.load(answered[missing[0]])
        again = _exchange(client, [calls[i] for i in missing], [sizes[i] for i in missing])
        for i, reply in zip(missing, again, strict=False):
            answered[i] = reply
    replies = expand(calls, sizes, answered)
    if len(replies) < len(commands) or any(isinstance(reply, Exception) for reply in replies):
        raise PartialPutError(replies, len(commands))
    return replies


def group(commands: Sequence[Command]) -> tuple[list[Command], list[int]]:
    """The script calls that run `commands`: runs of plain puts without dependencies as
    `put.many` calls of up to `GROUP` puts, anything else as it is; and how many of
    `commands` each call stands for."""
    calls: list[Command] = []
    sizes: list[int] = []
    run: list[Command] = []

    def flush() -> None:
        if len(run) == 1:
            calls.append(run[0])
        elif run:
            calls.append(Command("put.many", tuple(
                value for _, args in run for value in (len(args), *args))))
        if run:
            sizes.append(len(run))
            run.clear()

    for command in commands:
        if command.name == "put" and _independent(command.args):
            run.append(command)
            if len(run) == GROUP:
                flush()
        else:
            flush()
            calls.append(command)
            sizes.append(1)
    flush()
    return calls, sizes


def _independent(args: Sequence[Any]) -> bool:
    """True for put arguments without dependencies (`put.many` refuses those)."""
    for at in range(6, len(args) - 1, 2):
        if args[at] == "depends" and args[at + 1] != "[]":
            return False
    return True


def expand(calls: Sequence[Command], sizes: Sequence[int], answered: Sequence[Any]) -> list[Any]:
    """One reply per command from the calls' replies: a `put.many`'s list of jids, or its
    error for each of its puts (a refused `put.many` wrote none of them)."""
    replies: list[Any] = []
    for (name, _), size, reply in zip(calls, sizes, answered, strict=False):
        if name != "put.many":
            replies.append(reply)
        elif isinstance(reply, Exception):
            replies += [reply] * size
        else:
            replies += reply
    return replies


def _exchange(client: Client, calls: Sequence[Command], sizes: Sequence[int]) -> list[Any]:
    """Send the calls on one connection in round trips of about `CHUNK` puts, the next
    one written before the replies of the one before are read, so Redis runs a round
    trip while the client packs and reads; stops sending after a round trip with a refused
    call. Replies (errors as instances) in order.
    """
    ack = client.replica_ack
    script = client.script
    clock = client.now()
    replies: list[Any] = []
    in_flight: deque[Sequence[Command]] = deque()
    pool = client.redis.connection_pool
    connection = pool.get_connection()
    try:
        for chunk, weights in _chunks(calls, sizes):
            # Each job its own time, STEP apart and never going back (across round trips
            # too): jobs of equal priority are popped in the order of their put times.
            clock = max(client.now(), clock)
            parts = []
            for call, weight in zip(chunk, weights, strict=True):
                parts.append(_pack(script, clock, call))
                clock += weight * STEP
            if ack is not None:
                parts.append(ack.packed())
            connection.send_packed_command([b"".join(parts)])  # type: ignore[no-untyped-call]
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


def _chunks(
    calls: Sequence[Command], sizes: Sequence[int]
) -> Iterator[tuple[Sequence[Command], Sequence[int]]]:
    """The calls cut into round trips of about `CHUNK` puts each."""
    start, weight = 0, 0
    for end, size in enumerate(sizes):
        if weight and weight + size > CHUNK:
            yield calls[start:end], sizes[start:end]
            start, weight = end, 0
        weight += size
    if start < len(calls):
        yield calls[start:], sizes[start:]


def _pack(script: QlessScript, now: float, call: Command) -> bytes:
    """The RESP bytes of one call: hiredis' packer when it is installed (half the CPU of
    `batch.pack` for a `put.many`, the same bytes: numbers by `repr`), else `batch.pack`."""
    if _pack_command is None:
        return pack(script, now, [call])
    verb, target = script.call_words(call.name)
    return _pack_command((verb, target, 0, call.name, float(now), *call.args))


def _read_chunk(
    connection: Any, chunk: Sequence[Command], ack: ReplicaAck | None, replies: list[Any]
) -> bool:
    """Read one chunk's replies (and WAIT's) into `replies`; False if the script refused
    one (NOSCRIPT is no refusal: those commands are sent again once the script is loaded).
    """
    clean = True
    written = []
    for call in chunk:
        reply = decode(call.name, _read(connection))
        if not isinstance(reply, Exception):
            written.append(call)
        elif not isinstance(reply, ScriptNotLoadedError):
            clean = False
        replies.append(reply)
    if ack is not None:
        acknowledged = _read(connection)
        # Only what was written is owed to the replicas (NOSCRIPT: sent again, waited for then).
        replication.settle(ack, written, acknowledged)
    return clean


def _read(connection: Any) -> Any:
    """One reply; an error reply is returned, not raised."""
    try:
        return connection.read_response()
    except redis.ResponseError as exc:
        return exc
