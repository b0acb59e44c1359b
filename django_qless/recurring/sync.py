"""`sync_schedules()`: reconcile the declared schedules with every configured connection.

Nothing is written when a declaration is invalid or a declared jid is held by an
unmanaged template. Otherwise each database is planned read-only first, then (unless
`dry_run`) planned again under WATCH and applied in one transaction, retried when a
concurrent writer touched a template in between.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import redis

from ..conf import Problem, get_settings
from ..connection import get_client
from ..core import Client, QlessError
from ..core.crons import CronStore, StoredCron
from ..core.recurring import Template
from ..core.templates import Templates
from .cron_sync import apply_crons, plan_crons
from .declarations import Declared, collect
from .plan import KINDS, Action, Plan, commands_for, compute_plan

#: Transactions tried per database before giving up on a busy keyspace.
MAX_ATTEMPTS = 10


class RecurringSyncError(QlessError):
    """The declarations are invalid, a jid is taken, or the sync could not be applied."""


@dataclass(frozen=True)
class DatabaseResult:
    """The plan of one database (the aliases that point at it) and whether it was applied."""

    aliases: tuple[str, ...]
    plan: Plan
    applied: bool = False
    attempts: int = 0


@dataclass(frozen=True)
class SyncReport:
    """What a sync found and did."""

    dry_run: bool
    prune: bool
    problems: tuple[Problem, ...] = ()
    databases: tuple[DatabaseResult, ...] = ()

    @property
    def actions(self) -> list[tuple[DatabaseResult, Action]]:
        """Every action with the database it belongs to."""
        return [(db, action) for db in self.databases for action in db.plan.actions]

    @property
    def conflicts(self) -> list[Action]:
        """Declared jids held by unmanaged templates."""
        return [action for _, action in self.actions if action.kind == "conflict"]

    @property
    def ok(self) -> bool:
        """No invalid declaration and no conflict."""
        return not self.problems and not self.conflicts

    @property
    def drift(self) -> bool:
        """Whether Redis differs from the declarations (a sync would write)."""
        return any(db.plan.writes for db in self.databases)

    @property
    def applied(self) -> bool:
        """Whether anything was written."""
        return any(db.applied for db in self.databases)

    def counts(self) -> dict[str, int]:
        """Actions of each kind over all databases."""
        totals: dict[str, int] = dict.fromkeys(KINDS, 0)
        for db in self.databases:
            for kind, n in db.plan.counts().items():
                totals[kind] += n
        return totals

    def unmanaged(self) -> int:
        """Recurring templates left alone because django_qless does not manage them."""
        return sum(len(db.plan.unmanaged) for db in self.databases)

    def summary(self) -> str:
        """One line: `2 create, 1 update, 5 unchanged, 0 remove; 3 unmanaged left alone`."""
        counts = self.counts()
        parts = [f"{counts[kind]} {kind}" for kind in KINDS if counts[kind] or kind in
                 ("create", "update", "unchanged", "remove")]
        return ", ".join(parts) + f"; {self.unmanaged()} unmanaged left alone"

    def errors(self) -> list[str]:
        """Readable text of every problem and conflict."""
        return [f"{p.key} {p.message} ({p.id})" for p in self.problems] + [
            f"{a.declared.source if a.declared else a.jid}: {a.jid} {a.reason}"
            for a in self.conflicts
        ]

    def raise_for_errors(self) -> None:
        """Raise `RecurringSyncError` listing the problems, if there are any."""
        if not self.ok:
            raise RecurringSyncError("recurring schedules not synced: " + "; ".join(self.errors()))


def sync_schedules(
    *,
    prune: bool = False,
    dry_run: bool = False,
    clients: Mapping[str, Client] | None = None,
) -> SyncReport:
    """Plan the declared schedules on every connection and, unless `dry_run`, apply the plan.

    `clients` maps connection aliases to clients (default: every configured connection).
    Invalid declarations and conflicts are returned in the report (`.ok` is False) and
    nothing is written; Redis errors and exhausted retries raise.
    """
    settings = get_settings()
    declarations = collect(settings)
    if declarations.problems:
        return SyncReport(dry_run, prune, problems=declarations.problems)
    if clients is None:
        clients = {alias: get_client(alias) for alias in settings.connections}
    groups = group_databases(clients)
    planned = tuple(
        DatabaseResult(aliases, plan_database(store, *split(declarations.items, aliases), prune))
        for aliases, store in groups
    )
    report = SyncReport(dry_run, prune, databases=planned)
    if dry_run or not report.ok:
        return report
    if report.drift:
        report = SyncReport(dry_run, prune, databases=tuple(
            apply_database(store, aliases, *split(declarations.items, aliases), prune)
            for aliases, store in groups
        ))
    for _, store in groups:
        # Any sync is one more writer of due cron slots (each is put once whoever is first).
        CronStore(store.client).create_due()
    return report


def group_databases(clients: Mapping[str, Client]) -> list[tuple[tuple[str, ...], Templates]]:
    """Aliases grouped by the Redis database they reach (so one database is synced once)."""
    groups: dict[tuple[str, int], list[str]] = {}
    stores: dict[tuple[str, int], Templates] = {}
    for alias in sorted(clients):
        store = Templates(clients[alias])
        key = store.database_id()
        groups.setdefault(key, []).append(alias)
        stores.setdefault(key, store)
    return [(tuple(aliases), stores[key]) for key, aliases in groups.items()]


def split(
    items: Sequence[Declared], aliases: Sequence[str]
) -> tuple[list[Declared], dict[str, str]]:
    """The declarations of these aliases, and jid -> connection of all the others."""
    here = [d for d in items if d.connection in aliases]
    elsewhere = {d.jid: d.connection for d in items if d.connection not in aliases}
    return here, elsewhere


def by_kind(here: Sequence[Declared]) -> tuple[list[Declared], list[Declared]]:
    """(interval schedules, cron schedules)."""
    return ([d for d in here if d.cron is None], [d for d in here if d.cron is not None])


def plan_database(
    store: Templates, here: Sequence[Declared], elsewhere: Mapping[str, str], prune: bool
) -> Plan:
    """Read the templates and cron schedules of one database and plan it (no writes)."""
    intervals, crons = by_kind(here)
    listed = store.jids()
    templates = store.read([*(d.jid for d in intervals), *listed])
    now = store.client.now()
    plan = compute_plan(intervals, templates, now=now, prune=prune,
                        declared_elsewhere=elsewhere, now_cron=frozenset(d.jid for d in crons))
    cron = plan_crons(store.client, crons, intervals, elsewhere, prune, now)
    return Plan(now=now, actions=(*plan.actions, *cron), unmanaged=plan.unmanaged)


def apply_database(
    store: Templates, aliases: tuple[str, ...], here: Sequence[Declared],
    elsewhere: Mapping[str, str], prune: bool,
) -> DatabaseResult:
    """Plan again under WATCH and apply in one transaction; retried on concurrent writes.

    Templates first, then cron schedules (keys of django_qless's own, written apart).
    """
    intervals, crons = by_kind(here)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            plan = _apply_once(store, intervals, elsewhere, prune,
                               frozenset(d.jid for d in crons))
        except redis.WatchError:
            time.sleep(random.uniform(0, 0.02 * attempt))  # noqa: S311 - jitter, not secrets
            continue
        if plan.conflicts:
            raise RecurringSyncError(
                "a declared jid was taken while syncing: "
                + ", ".join(f"{a.jid} ({a.reason})" for a in plan.conflicts)
            )
        cron = apply_crons(store.client, crons, intervals, elsewhere, prune)
        plan = Plan(now=plan.now, actions=(*plan.actions, *cron), unmanaged=plan.unmanaged)
        return DatabaseResult(aliases, plan, applied=bool(plan.writes), attempts=attempt)
    raise RecurringSyncError(
        f"recurring templates on connection(s) {', '.join(aliases)} kept changing during "
        f"{MAX_ATTEMPTS} attempts; run the sync again"
    )


def _apply_once(
    store: Templates, here: Sequence[Declared], elsewhere: Mapping[str, str], prune: bool,
    now_cron: frozenset[str],
) -> Plan:
    """One optimistic attempt: WATCH, read, plan, MULTI/EXEC (raises WatchError if beaten)."""
    declared = [d.jid for d in here]
    with store.watching() as watch:
        watch.add(declared)
        listed = store.jids()
        watch.add(listed)
        templates = store.read([*declared, *listed])
        now = store.client.now()
        plan = compute_plan(here, templates, now=now, prune=prune, declared_elsewhere=elsewhere,
                            now_cron=now_cron)
        if plan.conflicts or not plan.writes:
            return plan
        watch.apply([command for action in plan.writes for command in commands_for(action, now)],
                    now)
    return plan


def list_templates(clients: Mapping[str, Client] | None = None) -> list[tuple[str, Template]]:
    """Every recurring template of every configured database, managed or not."""
    if clients is None:
        clients = {alias: get_client(alias) for alias in get_settings().connections}
    found: list[tuple[str, Template]] = []
    for aliases, store in group_databases(clients):
        templates = store.read(store.jids())
        found += [(",".join(aliases), t) for t in sorted(templates, key=lambda t: t.jid)]
    return found


def list_crons(clients: Mapping[str, Client] | None = None) -> list[tuple[str, StoredCron]]:
    """Every cron schedule synced to every configured database."""
    if clients is None:
        clients = {alias: get_client(alias) for alias in get_settings().connections}
    found: list[tuple[str, StoredCron]] = []
    for aliases, store in group_databases(clients):
        found += [(",".join(aliases), c) for c in CronStore(store.client).read_all()]
    return found
