"""One live process per worker name: qless leases belong to names, not processes.

A starting worker reads the presence published under its name (`core.presence`) and
publishes its own in the same transaction (WATCH/MULTI), so of two workers starting
under one name at once, one gets the name. A presence that still exists is fresh (it
expires `presence.TTL` seconds after its last publication); it holds the name unless its
process is known dead: on this host, a pid that no longer runs (a worker killed or
reloaded, then restarted) or this very pid (a restarted container).
"""

from __future__ import annotations

import logging
import os
import socket
import time

import redis

from ..core import Client, keys
from ..core.presence import Presence, add_publication, text
from ..exceptions import QlessConfigurationError

logger = logging.getLogger("django_qless.worker")


class WorkerNameInUseError(QlessConfigurationError):
    """Another live worker process holds this worker name."""


def claim(client: Client, presence: Presence, ttl: float) -> None:
    """Publish `presence` unless another live process holds its name (then
    `WorkerNameInUseError`, nothing written)."""
    key = keys.worker_presence(presence.name)
    with client.redis.pipeline(transaction=True) as pipe:
        while True:
            try:
                pipe.watch(key)  # type: ignore[no-untyped-call]
                holder = _read(pipe, presence.name)
                if holder is not None and holds(holder):
                    raise WorkerNameInUseError(refusal(holder, ttl))
                pipe.multi()
                add_publication(pipe, presence, ttl)
                pipe.execute()
                return
            except redis.WatchError:
                continue  # the name was published meanwhile: look again
            except redis.ResponseError as exc:
                # Refused as a whole (above maxmemory, say): the name was free when read,
                # and the presence is only a report, published again by the monitor; a
                # worker must still start and wait the condition out as its pops do.
                logger.info("qless worker %s: first presence not published (%s)",
                            presence.name, exc)
                return


def check_free(client: Client, name: str, ttl: float) -> None:
    """`WorkerNameInUseError` when another live process holds `name` (a read only)."""
    holder = _read(client.redis, name)
    if holder is not None and holds(holder):
        raise WorkerNameInUseError(refusal(holder, ttl))


def _read(connection: redis.Redis | redis.client.Pipeline, name: str) -> Presence | None:
    """The presence published under `name`, if any (None when absent or malformed)."""
    raw = connection.hgetall(keys.worker_presence(name))
    fields = {text(k): text(v) for k, v in raw.items()}
    return Presence.from_fields(name, fields) if fields else None


def holds(holder: Presence) -> bool:
    """Whether a fresh presence belongs to a process that may still run."""
    if holder.host != socket.gethostname():
        return True  # another host: its publication is all there is to go by
    if holder.pid == os.getpid():
        return False  # this very pid: an earlier process of a restarted container
    return pid_alive(holder.pid)


def pid_alive(pid: int) -> bool:
    """Whether a process of that pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def refusal(holder: Presence, ttl: float) -> str:
    """Why this worker does not start, and what to do."""
    ago = max(time.time() - holder.seen, 0.0)
    return (
        f"worker name {holder.name!r} is held by a live worker: pid {holder.pid} on host "
        f"{holder.host}, seen {ago:.1f}s ago. Two workers under one name share its job "
        "leases and run each other's jobs. Give this worker another --worker-name (or "
        "none: each process then gets a unique name), or stop that worker first; a "
        f"killed worker's name is free {ttl:.0f}s after it was last seen, or at once on "
        "its own host."
    )
