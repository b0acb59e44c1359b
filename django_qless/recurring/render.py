"""Text table and JSON views of a sync report, and of the templates in Redis."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.crons import StoredCron
from ..core.recurring import Template
from ..cron import is_number
from ..schedules import MANAGED_TAG, duration, schedule_jid
from .plan import Action, Change, managed
from .sync import DatabaseResult, SyncReport

Style = Callable[[str], str]
PLAN_HEADER = ("ACTION", "SCHEDULE", "JID", "JOB", "QUEUE", "EVERY", "NEXT RUN", "DETAILS")
#: Next runs of a cron schedule shown in the plan table (`--json` gives five).
TABLE_RUNS = 3
LIST_HEADER = ("JID", "MANAGED", "JOB", "QUEUE", "EVERY", "NEXT RUN", "SPAWNED", "TAGS")
CRON_LIST_HEADER = ("SCHEDULE", "CRON", "JOB", "QUEUE", "CATCH-UP", "LAST SLOT", "NEXT RUNS")


def when(timestamp: float | None) -> str:
    """A run time as `2024-05-01 03:00:00Z` (UTC), or `-`."""
    if timestamp is None:
        return "-"
    moment = dt.datetime.fromtimestamp(timestamp, dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def describe_change(change: Change) -> str:
    """`priority 0 -> 5`, `tags +a -b`, `data changed`, `next run 03:00 -> 04:00`."""
    if change.name == "tags":
        added = [t for t in change.new if t not in change.old]
        removed = [t for t in change.old if t not in change.new]
        return "tags " + " ".join([*(f"+{t}" for t in added), *(f"-{t}" for t in removed)])
    if change.name == "data":
        return "data changed"
    if change.name == "next_run":
        return f"next run {when(change.old)} -> {when(change.new)}"
    return f"{change.name} {change.old} -> {change.new}"


def details(action: Action) -> str:
    """The DETAILS cell: changes, or the reason."""
    if action.changes:
        text = ", ".join(describe_change(c) for c in action.changes)
        return text + (" (rescheduled)" if action.reschedule else "")
    return action.reason


def every_text(action: Action) -> str:
    """The EVERY cell."""
    if action.declared is not None:
        return action.declared.every.describe()
    if action.stored is not None:
        stored = action.stored.definition
        return f"cron {stored.expression} {stored.tz}"
    if action.found is not None:
        return f"every {duration(int(action.found.interval))}"
    return "-"


def next_run_text(action: Action) -> str:
    """The NEXT RUN cell: a cron schedule's next three slots, else the next run."""
    if action.next_runs:
        return ", ".join(when(t) for t in action.next_runs[:TABLE_RUNS])
    return when(action.next_run)


def plan_rows(report: SyncReport) -> list[tuple[str, Action, list[str]]]:
    """(kind, action, cells) for every action."""
    rows: list[tuple[str, Action, list[str]]] = []
    for db, action in report.actions:
        prefix = f"{','.join(db.aliases)}:" if len(report.databases) > 1 else ""
        cells = [action.kind, action.name or "-", action.jid, action.klass,
                 f"{prefix}{action.queue}", every_text(action), next_run_text(action),
                 details(action)]
        rows.append((action.kind, action, cells))
    return rows


def plan_lines(report: SyncReport, styles: Mapping[str, Style]) -> list[str]:
    """The plan as a table, each row styled by its action kind."""
    rows = plan_rows(report)
    if not rows:
        return ["No recurring schedules declared and none managed in Redis."]
    lines = table([cells for _, _, cells in rows], PLAN_HEADER)
    styled = [lines[0]]
    for (kind, _, _), line in zip(rows, lines[1:], strict=True):
        styled.append(styles.get(kind, str)(line))
    return styled


def plan_json(report: SyncReport) -> dict[str, Any]:
    """The report as JSON-ready data (see docs/pages/recurring.md for the shape)."""
    return {
        "dry_run": report.dry_run,
        "prune": report.prune,
        "ok": report.ok,
        "drift": report.drift,
        "applied": report.applied,
        "summary": {**report.counts(), "unmanaged": report.unmanaged()},
        "errors": [
            {"id": p.id, "where": p.key, "message": p.message} for p in report.problems
        ] + [
            {"id": "conflict", "where": a.declared.source if a.declared else a.jid,
             "message": f"{a.jid}: {a.reason}"}
            for a in report.conflicts
        ],
        "actions": [action_json(db, action) for db, action in report.actions],
    }


def action_json(db: DatabaseResult, action: Action) -> dict[str, Any]:
    """One action as JSON-ready data."""
    interval = (action.declared.interval.interval
                if action.declared is not None and action.declared.cron is None
                else action.found.interval if action.found is not None else None)
    return {
        "action": action.kind,
        "connections": list(db.aliases),
        "name": action.name,
        "jid": action.jid,
        "job": action.klass,
        "queue": action.queue,
        "every": every_text(action),
        "interval": interval,
        "next_run": action.next_run,
        "next_run_utc": None if action.next_run is None else when(action.next_run),
        "cron": cron_json(action),
        "next_runs": list(action.next_runs),
        "next_runs_utc": [when(t) for t in action.next_runs],
        "changes": [{"field": c.name, "old": _plain(c.old), "new": _plain(c.new)}
                    for c in action.changes],
        "reschedule": action.reschedule,
        "reason": action.reason,
    }


def cron_json(action: Action) -> dict[str, Any] | None:
    """A cron schedule's expression, zone and catch-up; None for interval schedules."""
    if action.declared is not None and action.declared.cron is not None:
        timing = action.declared.cron
        return {"expression": timing.expression, "tz": timing.tz,
                "catch_up": timing.catch_up}
    if action.stored is not None:
        stored = action.stored.definition
        return {"expression": stored.expression, "tz": stored.tz,
                "catch_up": int(stored.catch_up) if is_number(stored.catch_up)
                else stored.catch_up}
    return None


def template_rows(templates: Sequence[tuple[str, Template]], prefix: bool) -> list[list[str]]:
    """`--list` rows: every recurring template, managed or not."""
    return [
        [t.jid, "yes" if managed(t) else "no", t.klass,
         f"{alias}:{t.queue}" if prefix else t.queue, f"every {duration(int(t.interval))}",
         when(t.next_run), str(t.count),
         ",".join(tag for tag in t.tags if tag != MANAGED_TAG) or "-"]
        for alias, t in templates
    ]


def template_json(alias: str, template: Template) -> dict[str, Any]:
    """One template for `--list --json`."""
    return {
        "kind": "interval", "connection": alias, "jid": template.jid,
        "managed": managed(template),
        "job": template.klass, "queue": template.queue, "interval": template.interval,
        "next_run": template.next_run, "spawned": template.count,
        "priority": template.priority, "retries": template.retries,
        "backlog": template.backlog, "tags": list(template.tags), "data": template.data,
    }


def cron_list_rows(crons: Sequence[tuple[str, StoredCron]], prefix: bool, now: float
                   ) -> list[list[str]]:
    """`--list` rows of the cron schedules: their next three runs."""
    return [
        [c.name, f"{c.definition.expression} {c.definition.tz}", c.definition.klass,
         f"{alias}:{c.definition.queue}" if prefix else c.definition.queue,
         c.definition.catch_up, when(c.last),
         ", ".join(when(t) for t in c.definition.next_runs(now, TABLE_RUNS))]
        for alias, c in crons
    ]


def cron_list_json(alias: str, stored: StoredCron, now: float) -> dict[str, Any]:
    """One cron schedule for `--list --json` (beside the templates, `"kind": "cron"`)."""
    definition = stored.definition
    return {
        "kind": "cron", "connection": alias, "name": stored.name,
        "jid": schedule_jid(stored.name), "managed": True, "job": definition.klass,
        "queue": definition.queue,
        "cron": {"expression": definition.expression, "tz": definition.tz,
                 "catch_up": definition.catch_up},
        "last_slot": stored.last, "next_runs": definition.next_runs(now, 5),
        "priority": definition.priority, "retries": definition.retries,
        "tags": list(definition.tags), "data": definition.data,
    }


def _plain(value: Any) -> Any:
    """Tuples as lists, for JSON."""
    return list(value) if isinstance(value, tuple) else value
