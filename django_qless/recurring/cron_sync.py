"""Writing the cron part of a sync: definitions in one transaction, then slot jobs.

The definitions of one database are read under WATCH, planned and written in one
MULTI/EXEC, retried when a worker or another sync wrote in between. Then the slot jobs
the change made stale are cancelled: a changed schedule's future slots not yet started
(its new definition puts its own), a removed schedule's every slot not yet started.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence

import redis

from ..core import Client, QlessError
from ..core.crons import CronStore
from ..schedules import schedule_jid
from .cron_plan import cron_actions, definition_of
from .declarations import Declared
from .plan import Action

#: Transactions tried per database before giving up on a busy keyspace.
MAX_ATTEMPTS = 10


class CronSyncError(QlessError):
    """The cron schedules kept changing while the sync tried to write them."""


def replaced_names(
    store: CronStore, intervals: Sequence[Declared], elsewhere: Mapping[str, str]
) -> dict[str, str]:
    """Stored cron schedules to remove whatever `--prune` says, with the reason."""
    moved = {name: f"moved to connection {elsewhere[schedule_jid(name)]!r}"
             for name in store.names() if schedule_jid(name) in elsewhere}
    return {**moved, **{d.name: "now an interval schedule" for d in intervals}}


def plan_crons(
    client: Client, crons: Sequence[Declared], intervals: Sequence[Declared],
    elsewhere: Mapping[str, str], prune: bool, now: float,
) -> list[Action]:
    """Read the cron schedules of one database and plan them (no writes)."""
    store = CronStore(client)
    return cron_actions(crons, store.read_all(), now=now, prune=prune,
                        replaced=replaced_names(store, intervals, elsewhere))


def apply_crons(
    client: Client, crons: Sequence[Declared], intervals: Sequence[Declared],
    elsewhere: Mapping[str, str], prune: bool,
) -> list[Action]:
    """Plan again under WATCH, write in one transaction, then cancel stale slot jobs."""
    store = CronStore(client)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            now, actions = _apply_once(store, crons, intervals, elsewhere, prune)
        except redis.WatchError:
            time.sleep(random.uniform(0, 0.02 * attempt))  # noqa: S311 - jitter, not secrets
            continue
        for action in actions:
            if action.kind == "update" and action.stored is not None and action.declared:
                store.cancel_pending(action.stored.name, after=now,
                                     keep=definition_of(action.declared).digest)
            elif action.kind == "remove" and action.stored is not None:
                store.cancel_pending(action.stored.name, forget=True)
        return actions
    raise CronSyncError(f"cron schedules kept changing during {MAX_ATTEMPTS} attempts; "
                        "run the sync again")


def _apply_once(
    store: CronStore, crons: Sequence[Declared], intervals: Sequence[Declared],
    elsewhere: Mapping[str, str], prune: bool,
) -> tuple[float, list[Action]]:
    """One optimistic attempt: WATCH, read, plan, MULTI/EXEC (WatchError if beaten)."""
    with store.redis.pipeline() as pipe:
        store.watch(pipe, [d.name for d in crons])
        names = store.names()
        store.watch(pipe, names)
        now = store.client.now()
        actions = cron_actions(
            crons, store.read([*(d.name for d in crons), *names]), now=now, prune=prune,
            replaced=replaced_names(store, intervals, elsewhere),
        )
        writes = [a for a in actions if a.kind in ("create", "update", "remove")]
        if not writes:
            pipe.unwatch()
            return now, actions
        pipe.multi()
        for action in writes:
            if action.kind == "remove" and action.stored is not None:
                store.queue_remove(pipe, action.stored.name)
            elif action.declared is not None:
                # A created or changed schedule starts from the sync: no slot before it.
                store.queue_save(pipe, definition_of(action.declared), now)
        pipe.execute()
    return now, actions
