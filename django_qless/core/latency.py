"""Queue latency: how long the job a queue hands out next has been waiting.

The script ranks waiting jobs in `ql:q:<queue>-work` by `priority - put_time / 1e10`, so
the top member is the next job popped and its put time is `(priority - score) * 1e10`. Two
pipelined round trips serve any number of queues: the top member of each, then the
priority of each of those jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import keys

if TYPE_CHECKING:
    from .client import Client

#: The scale of the put time in a waiting job's score.
TIME_SCALE = 1e10


def latencies(client: Client, queues: Sequence[str]) -> dict[str, float]:
    """Seconds the next job of each queue with waiting jobs has waited (absent: none waits)."""
    pipe = client.redis.pipeline(transaction=False)
    for queue in queues:
        pipe.zrevrange(keys.queue_set(queue, "work"), 0, 0, withscores=True)
    heads = {queue: top[0] for queue, top in zip(queues, pipe.execute(), strict=True) if top}
    if not heads:
        return {}
    pipe = client.redis.pipeline(transaction=False)
    for member, _ in heads.values():
        pipe.hget(keys.job(text(member)), "priority")
    now = client.now()
    found: dict[str, float] = {}
    for (queue, (_, score)), priority in zip(heads.items(), pipe.execute(), strict=True):
        if priority is None:  # the job went away between the two reads
            continue
        put_time = (float(priority) - float(score)) * TIME_SCALE
        found[queue] = max(0.0, now - put_time)
    return found


def text(value: bytes | str) -> str:
    """A member as text, whatever the connection's decoding."""
    return value.decode() if isinstance(value, bytes) else value
