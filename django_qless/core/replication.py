"""Opt-in replication acknowledgement: `WAIT` for replicas after the writes callers rely on.

Redis replicates asynchronously: a put it answered can still be missing on the replica
that Sentinel promotes when the primary dies. With a `ReplicaAck`, the client sends
`WAIT <replicas> <timeout ms>` on the same connection, in the same round trip, after each
put (and requeue, put-if-absent) and each completion, failure and retry. Too few
acknowledgements make a put raise `ReplicationError` (the job is on the primary, but the
promise that it survives a failover is not kept); for a completion, failure or retry the
job's work is done, so it is only logged as a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from .commands import Command
from .exceptions import InvalidArgumentError, ReplicationError, ScriptNotLoadedError
from .replies import decode

if TYPE_CHECKING:
    from .client import Client

logger = logging.getLogger("django_qless")

#: Commands whose caller is told (`ReplicationError`) when too few replicas have them,
#: with the position of the jid among their arguments.
PROMISED = {"put": 2, "requeue": 2, "put.ifabsent": 3, "put.many": 3}
#: Commands whose shortfall is logged: the job ran, there is nothing left to retry.
REPORTED = {"complete": 0, "complete.pop": 0, "fail": 0, "retry": 0}
ACKNOWLEDGED = frozenset(PROMISED) | frozenset(REPORTED)


@dataclass(frozen=True)
class ReplicaAck:
    """How many replicas must have a write, and how long to wait for them."""

    replicas: int
    #: Seconds `WAIT` blocks at most (Redis takes whole milliseconds, at least 1).
    timeout: float

    def __post_init__(self) -> None:
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) \
                or self.replicas < 1:
            raise InvalidArgumentError(f"replicas must be an integer >= 1, got {self.replicas!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) \
                or not 0 < self.timeout < 3600:
            raise InvalidArgumentError(
                f"timeout must be a number of seconds above 0 and below 3600, got {self.timeout!r}"
            )

    @property
    def timeout_ms(self) -> int:
        """The timeout as `WAIT` takes it (0 would mean for ever, so at least 1)."""
        return max(1, round(self.timeout * 1000))

    def packed(self) -> bytes:
        """The RESP bytes of `WAIT <replicas> <timeout ms>`."""
        words = [b"WAIT", str(self.replicas).encode(), str(self.timeout_ms).encode()]
        return b"*3\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(word), word) for word in words)


def wanted(ack: ReplicaAck | None, commands: Sequence[Command]) -> bool:
    """True when `WAIT` should follow these commands."""
    return ack is not None and any(command.name in ACKNOWLEDGED for command in commands)


def settle(ack: ReplicaAck, commands: Sequence[Command], acknowledged: Any) -> None:
    """Act on `WAIT`'s answer (a refusal counts as none): raise for a put, log for the rest."""
    if isinstance(acknowledged, BaseException) and not isinstance(
        acknowledged, redis.ResponseError
    ):
        return  # a lost connection or an interruption: the commands' own replies carry it
    if isinstance(acknowledged, redis.ResponseError):
        # Redis refused WAIT (renamed, an ACL, a proxy): the writes happened, but no replica
        # is known to have them.
        logger.warning("qless: WAIT after %s refused: %s", _names(commands), acknowledged)
        acknowledged = 0
    count = int(acknowledged)
    if count >= ack.replicas:
        return
    for name, args in commands:
        if name in PROMISED:
            jid = str(args[PROMISED[name]])
            raise ReplicationError(name, jid, count, ack.replicas, ack.timeout_ms)
    for name, args in commands:
        if name in REPORTED:
            logger.warning(
                "qless: %s of job %s was written to the primary but confirmed by %d of %d "
                "replicas within %d ms; a failover now could run the job again",
                name, args[REPORTED[name]], count, ack.replicas, ack.timeout_ms,
            )


def call(client: Client, ack: ReplicaAck, command: Command) -> Any:
    """Run one script command followed by `WAIT`, in one round trip on one connection."""
    reply, acknowledged = _exchange(client, ack, command)
    if isinstance(reply, ScriptNotLoadedError):
        # Nothing ran (a restarted or promoted Redis without the script): load it, once.
        client.script.load(reply)
        reply, acknowledged = _exchange(client, ack, command)
    if isinstance(reply, Exception):
        raise reply
    settle(ack, [command], acknowledged)
    return reply


def _exchange(client: Client, ack: ReplicaAck, command: Command) -> tuple[Any, Any]:
    """Send the script call and WAIT together; return both replies (errors as instances)."""
    from .batch import pack  # noqa: PLC0415 - batch imports this module

    pool = client.redis.connection_pool
    connection = pool.get_connection()
    try:
        connection.send_packed_command(  # type: ignore[no-untyped-call]
            [pack(client.script, client.now(), [command]) + ack.packed()]
        )
        replies = [_read(connection) for _ in range(2)]
    except BaseException:
        connection.disconnect()  # type: ignore[no-untyped-call]  # replies may still be owed
        raise
    finally:
        pool.release(connection)
    return decode(command.name, replies[0]), replies[1]


def _read(connection: Any) -> Any:
    """One reply; an error reply is returned, not raised."""
    try:
        return connection.read_response()
    except redis.ResponseError as exc:
        return exc


def _names(commands: Sequence[Command]) -> str:
    """The command names, for a log line."""
    return ", ".join(name for name, _ in commands)


def report(ack: ReplicaAck, commands: Sequence[Command], acknowledged: Any) -> None:
    """`settle` for commands sent in a batch: every shortfall is logged, none raised."""
    try:
        settle(ack, commands, acknowledged)
    except ReplicationError as exc:
        logger.warning("qless: %s", exc)
