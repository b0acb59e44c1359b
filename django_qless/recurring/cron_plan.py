"""The cron part of the sync plan: declared cron schedules against those Redis holds.

Like templates, each declared cron schedule is `create`d, `update`d or left `unchanged`,
and one no longer declared is a `remove` (with `--prune`, or at once when it moved to
another connection or became an interval schedule) or an `orphan` (kept). The keys are
django_qless's own, so there is no conflict with other qless clients.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..core.crons import CronDefinition, StoredCron
from ..schedules import schedule_jid
from .declarations import Declared
from .plan import Action, Change, Kind

#: Next runs an action carries (the table shows three of them, `--json` all).
NEXT_RUNS = 5


def definition_of(declared: Declared) -> CronDefinition:
    """What Redis should hold for a declared cron schedule."""
    timing = declared.cron
    if timing is None:
        raise TypeError(f"schedule {declared.name!r} is not a cron schedule")
    return CronDefinition(
        name=declared.name, expression=timing.expression, tz=timing.tz,
        catch_up=str(timing.catch_up), klass=declared.klass, queue=declared.queue,
        data=declared.encoded, priority=float(declared.priority), tags=declared.tags,
        retries=declared.retries,
    )


def cron_actions(
    declared: Sequence[Declared],
    stored: Iterable[StoredCron],
    *,
    now: float,
    prune: bool = False,
    replaced: Mapping[str, str] | None = None,
) -> list[Action]:
    """Diff the declared cron schedules of one database with those it holds (no I/O).

    `replaced` maps names declared elsewhere (another connection, or now an interval
    schedule) to why: such a stored schedule is removed even without `prune`.
    """
    replaced = replaced or {}
    by_name = {item.name: item for item in stored}
    actions = [_declared_action(d, by_name.get(d.name), now) for d in declared]
    wanted = {d.name for d in declared}
    for name in sorted(set(by_name) - wanted):
        item = by_name[name]
        jid = schedule_jid(name)
        runs = tuple(item.definition.next_runs(now, NEXT_RUNS))
        if name in replaced:
            actions.append(Action("remove", jid, stored=item, reason=replaced[name]))
        elif prune:
            actions.append(Action("remove", jid, stored=item, reason="no longer declared"))
        else:
            actions.append(Action("orphan", jid, stored=item, next_run=runs[0] if runs else None,
                                  next_runs=runs,
                                  reason="no longer declared; --prune removes it"))
    return actions


def _declared_action(declared: Declared, stored: StoredCron | None, now: float) -> Action:
    """create / update / unchanged for one declared cron schedule."""
    wanted = definition_of(declared)
    runs = tuple(wanted.next_runs(now, NEXT_RUNS))
    first = runs[0] if runs else None
    if stored is None:
        return Action("create", declared.jid, declared=declared, next_run=first, next_runs=runs)
    changes = diff(stored.definition, wanted)
    kind: Kind = "update" if changes else "unchanged"
    return Action(kind, declared.jid, declared=declared, stored=stored, changes=changes,
                  reschedule=any(c.name in ("expression", "tz") for c in changes),
                  next_run=first, next_runs=runs)


def diff(old: CronDefinition, new: CronDefinition) -> tuple[Change, ...]:
    """The fields that differ between what Redis holds and what is declared."""
    return tuple(
        Change(name, getattr(old, name), getattr(new, name))
        for name in CronDefinition.COMPARED if getattr(old, name) != getattr(new, name)
    )
