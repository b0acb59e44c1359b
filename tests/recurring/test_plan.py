"""compute_plan is a pure function: declarations + templates + now -> actions (no Redis here)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from django_qless.core.recurring import Template
from django_qless.recurring.declarations import Declared
from django_qless.recurring.plan import commands_for, compute_plan
from django_qless.schedules import MANAGED_TAG, every, schedule_jid
from tests.recurring.conftest import MIDNIGHT

NOW = MIDNIGHT + 0.25


def declared(name: str = "poll", **changes: Any) -> Declared:
    """A resolved schedule, every 5 minutes."""
    data = changes.pop("data", {"args": [], "kwargs": {"source": "main"}})
    base = Declared(
        name=name, jid=schedule_jid(name), klass="app.poll", queue="feeds", connection="default",
        every=every(minutes=5), priority=0, tags=("feeds", MANAGED_TAG), retries=5, backlog=1,
        data=data, encoded=json.dumps(data), source=f"@qless_job {name}",
    )
    return dataclasses.replace(base, **changes)


def template_of(d: Declared, **changes: Any) -> Template:
    """The template a sync of `d` at NOW would have written."""
    base = Template(
        jid=d.jid, klass=d.klass, queue=d.queue, priority=d.priority,
        interval=d.every.interval, retries=d.retries, backlog=d.backlog, data=d.encoded,
        tags=d.tags, count=0, next_run=d.every.next_run(NOW),
    )
    return dataclasses.replace(base, **changes)


def test_missing_template_is_a_create_at_the_next_aligned_run() -> None:
    d = declared()
    plan = compute_plan([d], [], now=NOW)
    [action] = plan.actions
    assert (action.kind, action.reschedule, action.next_run) == ("create", True, MIDNIGHT + 300)
    assert plan.writes == (action,)


def test_identical_template_is_unchanged_even_when_idle() -> None:
    d = declared()
    # Ten runs were missed (nobody popped): the next run lies in the past, still aligned.
    idle = template_of(d, next_run=MIDNIGHT + 300, count=3)
    plan = compute_plan([d], [idle], now=NOW + 3000)
    assert [a.kind for a in plan.actions] == ["unchanged"]
    assert plan.writes == ()
    assert plan.actions[0].next_run == MIDNIGHT + 300


def test_data_compared_as_json_and_tags_as_a_set() -> None:
    d = declared()
    t = template_of(d, data='{"kwargs": {"source": "main"},  "args": []}',
                    tags=(MANAGED_TAG, "feeds"))
    assert compute_plan([d], [t], now=NOW).actions[0].kind == "unchanged"


def test_field_changes_are_updates_that_keep_the_next_run() -> None:
    d = declared(priority=5, retries=2, backlog=3, queue="other",
                 data={"args": [], "kwargs": {"source": "b"}}, tags=("new", MANAGED_TAG))
    t = template_of(declared())
    [action] = compute_plan([d], [t], now=NOW).actions
    assert action.kind == "update"
    assert not action.reschedule
    assert action.next_run == t.next_run
    assert {c.name for c in action.changes} == {
        "priority", "retries", "backlog", "queue", "data", "tags"
    }
    commands = commands_for(action, NOW)
    assert [name for name, _ in commands] == ["recur.update", "recur.tag", "recur.untag"]
    update = commands[0][1]
    assert update[0] == d.jid
    pairs = dict(zip(update[1::2], update[2::2], strict=True))
    assert pairs == {"queue": "other", "priority": 5, "retries": 2, "backlog": 3,
                     "data": d.encoded}
    assert commands[1][1] == (d.jid, "new")
    assert commands[2][1] == (d.jid, "feeds")


def test_interval_change_reschedules_with_recur() -> None:
    d = declared(every=every(minutes=10))
    t = template_of(declared())
    [action] = compute_plan([d], [t], now=NOW).actions
    assert action.kind == "update"
    assert action.reschedule
    assert [(c.name, c.old, c.new) for c in action.changes] == [("interval", 300, 600)]
    assert action.next_run == MIDNIGHT + 600
    [(name, args)] = commands_for(action, NOW)
    assert name == "recur"
    assert args[:6] == ("feeds", d.jid, "app.poll", d.encoded, "interval", 600)
    assert NOW + args[6] == MIDNIGHT + 600  # offset lands exactly on the aligned run


def test_phase_change_reschedules() -> None:
    d = declared(every=every(minutes=5, offset=60))
    t = template_of(declared())
    [action] = compute_plan([d], [t], now=NOW).actions
    assert [c.name for c in action.changes] == ["next_run"]
    assert action.reschedule and action.next_run == MIDNIGHT + 60


def test_template_missing_from_the_recur_set_is_rescheduled() -> None:
    d = declared()
    [action] = compute_plan([d], [template_of(d, next_run=None)], now=NOW).actions
    assert action.kind == "update" and action.reschedule


def test_unmanaged_templates_are_never_in_the_plan() -> None:
    d = declared()
    stranger = Template(jid="hand-made", klass="x", queue="q", priority=0, interval=60,
                        retries=0, backlog=0, data="{}", tags=("ops",), count=9, next_run=1.0)
    for prune in (False, True):
        plan = compute_plan([d], [stranger], now=NOW, prune=prune)
        assert [a.jid for a in plan.actions] == [d.jid]
        assert plan.unmanaged == ("hand-made",)


def test_undeclared_managed_template_is_orphan_or_removed_with_prune() -> None:
    gone = template_of(declared("gone"))
    orphan = compute_plan([], [gone], now=NOW)
    assert [(a.kind, a.jid) for a in orphan.actions] == [("orphan", gone.jid)]
    assert orphan.writes == ()
    pruned = compute_plan([], [gone], now=NOW, prune=True)
    assert [a.kind for a in pruned.actions] == ["remove"]
    assert commands_for(pruned.actions[0], NOW) == [("unrecur", (gone.jid,))]


def test_template_declared_on_another_connection_is_removed_without_prune() -> None:
    moved = template_of(declared("moved"))
    plan = compute_plan([], [moved], now=NOW, declared_elsewhere={moved.jid: "other"})
    [action] = plan.actions
    assert action.kind == "remove"
    assert "moved to connection 'other'" in action.reason


def test_declared_jid_held_by_an_unmanaged_template_is_a_conflict() -> None:
    d = declared()
    t = template_of(d, tags=("feeds",))
    plan = compute_plan([d], [t], now=NOW)
    [action] = plan.conflicts
    assert action.kind == "conflict"
    assert MANAGED_TAG in action.reason
    assert commands_for(action, NOW) == []


def test_counts_and_order() -> None:
    a, b, c = declared("a"), declared("b"), declared("c", priority=1)
    gone = template_of(declared("zz"))
    plan = compute_plan([a, b, c], [template_of(b), template_of(declared("c")), gone],
                        now=NOW, prune=True)
    assert [(x.kind, x.name) for x in plan.actions] == [
        ("create", "a"), ("unchanged", "b"), ("update", "c"), ("remove", None)
    ]
    assert plan.counts() == {"create": 1, "update": 1, "unchanged": 1, "remove": 1,
                             "orphan": 0, "conflict": 0}


def test_plan_is_pure() -> None:
    d = declared()
    t = template_of(declared(), priority=9)
    first = compute_plan([d], [t], now=NOW)
    assert compute_plan([d], [t], now=NOW) == first
