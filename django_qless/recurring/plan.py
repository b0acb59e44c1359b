"""The sync plan: a pure function of the declarations, the templates in Redis, and `now`.

The plan says what to write; `commands_for` turns its actions into script commands, which
`core.templates` sends.

For one Redis database, each declared schedule is `create`d, `update`d or left
`unchanged`; each managed template that is no longer declared is a `remove` (with
`--prune`, or at once when it moved to another connection) or an `orphan` (kept).
A declared jid held by a template without the managed tag is a `conflict`: it is
reported and nothing is written. Templates that are not managed are never touched.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core import commands
from ..core.commands import Command
from ..core.crons import StoredCron
from ..core.recurring import Template
from ..schedules import MANAGED_TAG
from .declarations import Declared

Kind = Literal["create", "update", "unchanged", "remove", "orphan", "conflict"]
KINDS: tuple[Kind, ...] = ("create", "update", "unchanged", "remove", "orphan", "conflict")
#: Actions that write to Redis.
WRITES: frozenset[Kind] = frozenset({"create", "update", "remove"})
#: Fields `recur.update` can change without touching the next run time.
UPDATABLE = ("klass", "queue", "priority", "retries", "backlog", "data")


def managed(template: Template) -> bool:
    """Whether django_qless manages this template (it carries the reserved tag)."""
    return MANAGED_TAG in template.tags


@dataclass(frozen=True)
class Change:
    """One field that differs: what Redis has, what the declaration wants."""

    name: str
    old: Any
    new: Any


@dataclass(frozen=True)
class Action:
    """What the sync does about one jid."""

    kind: Kind
    jid: str
    declared: Declared | None = None
    found: Template | None = None
    changes: tuple[Change, ...] = ()
    #: Whether applying needs `recur` (interval or phase changed, or a create).
    reschedule: bool = False
    #: Next run time once applied (for creates and reschedules: the next aligned run).
    next_run: float | None = None
    reason: str = ""
    #: The cron schedule Redis holds under this name (cron schedules only).
    stored: StoredCron | None = None
    #: The next run times once applied (cron schedules: the next five slots).
    next_runs: tuple[float, ...] = ()

    @property
    def name(self) -> str | None:
        """The schedule name, when declared or stored as a cron schedule."""
        if self.declared is not None:
            return self.declared.name
        return self.stored.name if self.stored is not None else None

    @property
    def klass(self) -> str:
        """The job klass (declared, else found)."""
        if self.declared is not None:
            return self.declared.klass
        if self.stored is not None:
            return self.stored.definition.klass
        return self.found.klass if self.found is not None else ""

    @property
    def queue(self) -> str:
        """The queue (declared, else found)."""
        if self.declared is not None:
            return self.declared.queue
        if self.stored is not None:
            return self.stored.definition.queue
        return self.found.queue if self.found is not None else ""

    @property
    def is_cron(self) -> bool:
        """Whether the action is about a cron schedule (not a qless recurring template)."""
        return self.stored is not None or (
            self.declared is not None and self.declared.cron is not None)


@dataclass(frozen=True)
class Plan:
    """Actions for one database, in a stable order, plus the unmanaged jids left alone."""

    now: float
    actions: tuple[Action, ...]
    unmanaged: tuple[str, ...] = field(default=())

    @property
    def writes(self) -> tuple[Action, ...]:
        """The actions that change Redis."""
        return tuple(a for a in self.actions if a.kind in WRITES)

    @property
    def conflicts(self) -> tuple[Action, ...]:
        """Declared jids held by templates django_qless does not manage."""
        return tuple(a for a in self.actions if a.kind == "conflict")

    def counts(self) -> dict[str, int]:
        """Number of actions of each kind (every kind present, zeros included)."""
        counted = Counter(a.kind for a in self.actions)
        return {kind: counted[kind] for kind in KINDS}


def compute_plan(
    declared: Sequence[Declared],
    found: Iterable[Template],
    *,
    now: float,
    prune: bool = False,
    declared_elsewhere: Mapping[str, str] | None = None,
    now_cron: frozenset[str] = frozenset(),
) -> Plan:
    """Diff the declarations of one database with its templates (no I/O).

    `declared_elsewhere` maps the jids declared on other databases to their connection:
    a managed copy here is removed even without `prune`, or the job would run twice; so
    is the template of a jid in `now_cron` (declared here as a cron schedule).
    """
    elsewhere = declared_elsewhere or {}
    by_jid = {template.jid: template for template in found}
    actions = [_declared_action(d, by_jid.get(d.jid), now) for d in declared]
    wanted = {d.jid for d in declared}
    unmanaged: list[str] = []
    for jid in sorted(set(by_jid) - wanted):
        template = by_jid[jid]
        if not managed(template):
            unmanaged.append(jid)
        elif jid in elsewhere:
            actions.append(Action("remove", jid, found=template,
                                  reason=f"moved to connection {elsewhere[jid]!r}"))
        elif jid in now_cron:
            actions.append(Action("remove", jid, found=template,
                                  reason="now a cron schedule"))
        elif prune:
            actions.append(Action("remove", jid, found=template, reason="no longer declared"))
        else:
            actions.append(Action("orphan", jid, found=template, next_run=template.next_run,
                                  reason="no longer declared; --prune removes it"))
    return Plan(now=now, actions=tuple(actions), unmanaged=tuple(unmanaged))


def _declared_action(declared: Declared, template: Template | None, now: float) -> Action:
    """create / update / unchanged / conflict for one declared schedule."""
    if template is None:
        return Action("create", declared.jid, declared=declared, reschedule=True,
                      next_run=declared.interval.next_run(now))
    if not managed(template):
        return Action(
            "conflict", declared.jid, declared=declared, found=template,
            next_run=template.next_run,
            reason=f"a recurring job with this jid exists without the {MANAGED_TAG!r} tag; "
            "unrecur it, or tag it to hand it over",
        )
    changes = diff(declared, template, now)
    reschedule = any(c.name in ("interval", "next_run") for c in changes)
    if not changes:
        return Action("unchanged", declared.jid, declared=declared, found=template,
                      next_run=template.next_run)
    return Action(
        "update", declared.jid, declared=declared, found=template, changes=changes,
        reschedule=reschedule,
        next_run=declared.interval.next_run(now) if reschedule else template.next_run,
    )


def diff(declared: Declared, template: Template, now: float) -> tuple[Change, ...]:
    """The fields of `template` that differ from the declaration."""
    changes = [
        Change(name, getattr(template, name), getattr(declared, name))
        for name in ("klass", "queue", "priority", "retries", "backlog")
        if getattr(template, name) != getattr(declared, name)
    ]
    if _decoded(template.data) != declared.data:
        changes.append(Change("data", template.data, declared.encoded))
    if set(template.tags) != set(declared.tags):
        changes.append(Change("tags", template.tags, declared.tags))
    every = declared.interval
    if template.interval != every.interval:
        changes.append(Change("interval", template.interval, every.interval))
    elif template.next_run is None or not every.aligned(template.next_run, now):
        # The phase moved (new offset, anchor or DST rule): realign on the next run.
        changes.append(Change("next_run", template.next_run, every.next_run(now)))
    return tuple(changes)


def commands_for(action: Action, now: float) -> list[Command]:
    """The script commands that carry out one action."""
    declared = action.declared
    if action.kind == "remove":
        return [commands.unrecur(action.jid)]
    if declared is None or action.kind not in ("create", "update"):
        return []
    if action.reschedule:
        # recur rewrites every field and keeps the count; the first run is the next aligned one.
        return [commands.recur(
            declared.queue, declared.jid, declared.klass, declared.encoded,
            declared.interval.interval, declared.interval.next_run(now) - now,
            priority=declared.priority, tags=declared.tags, retries=declared.retries,
            backlog=declared.backlog,
        )]
    return _field_commands(declared, action)


def _field_commands(declared: Declared, action: Action) -> list[Command]:
    """`recur.update` of the changed fields, then the tags to add and to remove."""
    fields = [
        (change.name, declared.encoded if change.name == "data" else getattr(declared, change.name))
        for change in action.changes if change.name in UPDATABLE
    ]
    result = [commands.recur_update(declared.jid, fields)] if fields else []
    if action.found is not None:
        current = action.found.tags
        missing = [tag for tag in declared.tags if tag not in current]
        extra = [tag for tag in current if tag not in declared.tags]
        if missing:
            result.append(commands.recur_tag(declared.jid, missing))
        if extra:
            result.append(commands.recur_untag(declared.jid, extra))
    return result


def _decoded(raw: str) -> Any:
    """A template's JSON data, or the raw text when it is not JSON (so it differs)."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
