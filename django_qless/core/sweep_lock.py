"""The outbox sweep lock: one sweeper at a time per Redis, held with SET NX PX.

The lock expires on its own, so a sweeper that dies holding it blocks the others for at
most its time to live. Release deletes it only while it still holds the holder's token.
"""

from __future__ import annotations

import secrets

import redis

from . import keys


class SweepLock:
    """`keys.OUTBOX_SWEEP_LOCK` on one Redis, taken for at most `ttl` seconds."""

    def __init__(self, client: redis.Redis, ttl: float) -> None:
        self.client = client
        self.ttl_ms = max(int(ttl * 1000), 1)
        self.token = secrets.token_hex(8)

    def acquire(self) -> bool:
        """Take the lock unless another sweeper holds it."""
        return bool(self.client.set(keys.OUTBOX_SWEEP_LOCK, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> None:
        """Give the lock back, unless it expired and another sweeper took it meanwhile."""
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(keys.OUTBOX_SWEEP_LOCK)  # type: ignore[no-untyped-call]
                held = pipe.get(keys.OUTBOX_SWEEP_LOCK)
                if held is not None and _text(held) == self.token:
                    pipe.multi()
                    pipe.delete(keys.OUTBOX_SWEEP_LOCK)
                    pipe.execute()
            except redis.WatchError:
                pass  # it changed hands between the read and the delete: not ours any more


def _text(value: bytes | str) -> str:
    """A reply as text, whatever the client's decode_responses."""
    return value.decode() if isinstance(value, bytes) else value
