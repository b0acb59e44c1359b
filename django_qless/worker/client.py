"""The worker's own qless client: on the connection its queues are routed to, under its name."""

from __future__ import annotations

from collections.abc import Callable

from ..connection import aliases_for_queues, get_client
from ..core import Client
from ..core.client import default_worker_name
from ..exceptions import QlessConfigurationError
from .options import WorkerOptions


def worker_client(options: WorkerOptions, base: Client | None = None) -> Client:
    """A client on `base`'s connection pool (default: the queues' connection), so every
    command carries the worker's name and its clock offset."""
    if base is None:
        base = _client_for(options.queues)
    return Client(
        base.redis,
        clock=_offset(base.clock, options.clock_offset),
        worker_name=options.name or default_worker_name(),
        max_payload_bytes=base.max_payload_bytes,
        put_memory_limit=base.memory.limit,
    )


def _client_for(queues: tuple[str, ...]) -> Client:
    """The client of the one connection all the queues are routed to."""
    grouped = aliases_for_queues(queues)
    if len(grouped) > 1:
        routes = "; ".join(f"{alias}: {', '.join(names)}" for alias, names in grouped.items())
        raise QlessConfigurationError(
            f"a worker serves queues of one connection only, got {routes}; start one worker "
            "per connection"
        )
    return get_client(next(iter(grouped)))


def _offset(clock: Callable[[], float], seconds: float) -> Callable[[], float]:
    """`clock`, moved by `seconds` (unchanged when 0)."""
    if not seconds:
        return clock
    return lambda: clock() + seconds
