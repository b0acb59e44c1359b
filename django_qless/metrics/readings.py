"""One read of the figures a metrics scrape reports, per connection (core client only)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import Client, QlessError, QueueCounts, Stats
from ..core.fn_metrics import Figures, read_totals
from ..core.latency import latencies

#: Seconds a worker may go unseen (no pop, no heartbeat) and still count as alive, when the
#: lease cannot be read: qless's default lease.
DEFAULT_ALIVE_WINDOW = 60.0


@dataclass(frozen=True)
class Reading:
    """What one qless database holds now, and its statistics for the current UTC day."""

    queues: tuple[QueueCounts, ...]
    stats: dict[str, Stats]
    failure_groups: dict[str, int]
    workers_known: int
    workers_alive: int
    #: Seconds the next job of each queue with waiting jobs has waited.
    latencies: dict[str, float] = field(default_factory=dict)
    #: Each klass' figures since the first job counted (`core.fn_metrics`).
    functions: dict[str, Figures] = field(default_factory=dict)


def read(client: Client) -> Reading:
    """Read queue counts and latencies, today's stats per queue, failure groups and workers."""
    now = client.now()
    queues = tuple(client.queues())
    stats = {counts.name: client.existing_queue(counts.name).stats(now) for counts in queues}
    try:
        lease = client.config.get("heartbeat")
    except QlessError:  # written badly by another client
        lease = None
    window = float(lease) if isinstance(lease, int | float) and lease > 0 else DEFAULT_ALIVE_WINDOW
    return Reading(
        queues=queues,
        stats=stats,
        failure_groups=client.failed(),
        workers_known=len(client.workers.counts()),
        workers_alive=client.workers.seen_since(now - window),
        latencies=latencies(client, [counts.name for counts in queues]),
        functions=read_totals(client.redis),
    )
