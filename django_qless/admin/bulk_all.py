"""Act on every job a selection matches: the actions offered, their input, and the steps.

Each bulk action is a job action of `job_actions.JOB_ACTIONS` (same permission, states,
operation and audit text), applied a chunk at a time to the jids a run collected.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from django import forms
from django.core.exceptions import ValidationError

from ..core import Client, InvalidArgumentError
from ..core import validation as check
from . import audit, bulk_runs, search_query
from .dependents import waiting_on
from .feedback import plural
from .forms import checked, split_tags
from .job_actions import JobAction, job_action
from .list_walks import TRACKED, UnwalkableFilterError, selection_for, tracked_walk
from .page_context import PageContext
from .selection import JobFilter, Selection
from .views.actions import Outcome, all_jobs, each_job

#: Jobs acted on per chunk (one request), and most jobs one script call reads or changes:
#: reading a job with its history costs Redis tens of microseconds.
CHUNK = 200
SLICE = 50
#: Matches collected per walk step, and most steps in one request.
STEP_LIMIT = 500
STEPS_PER_REQUEST = 20
#: A collecting request stops after this long, whatever its steps (seconds).
REQUEST_BUDGET = 0.5
#: Most jobs one run collects (the confirmation says when a selection has more).
MAX_JOBS = 100_000


@dataclass(frozen=True)
class BulkAction:
    """One action offered on every matching job."""

    slug: str
    #: The job action it applies (`job_actions.job_action`).
    job_action: str
    #: How the confirmation names it ("Retry", "Move to queue", ...).
    label: str
    #: The past tense of its progress line ("retried").
    done: str

    @property
    def action(self) -> JobAction:
        """The job action applied to each chunk."""
        return job_action(self.job_action)


BULK_ACTIONS: dict[str, BulkAction] = {
    entry.slug: entry for entry in (
        BulkAction("retry", "job_retry", "Retry", "retried"),
        BulkAction("cancel", "job_cancel", "Cancel", "cancelled"),
        BulkAction("move", "job_move", "Move to queue", "moved"),
        BulkAction("priority", "job_priority", "Set priority", "changed"),
        BulkAction("tag", "job_tag", "Add tags", "tagged"),
        BulkAction("untag", "job_untag", "Remove tags", "untagged"),
        BulkAction("track", "job_track", "Track", "tracked"),
    )
}


class BulkForm(forms.Form):
    """The action and its input: a queue for move, a priority, tags for tag and untag."""

    action = forms.ChoiceField(choices=[(a.slug, a.label) for a in BULK_ACTIONS.values()])
    queue = forms.CharField(max_length=128, required=False)
    priority = forms.CharField(max_length=64, required=False)
    tags = forms.CharField(max_length=2000, required=False)

    def __init__(self, *args: Any, queues: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queues = queues

    def clean(self) -> dict[str, Any]:
        """Only the input the chosen action takes, checked as the single action checks it."""
        cleaned = super().clean() or {}
        field = BULK_ACTIONS[cleaned["action"]].action.field if "action" in cleaned else ""
        data: dict[str, Any] = {"action": cleaned.get("action")}
        if field == "queue":
            data["queue"] = self.target_queue(cleaned.get("queue", "").strip())
        elif field == "priority":
            data["priority"] = self.number(cleaned.get("priority", "").strip())
        elif field == "tags":
            tags = split_tags(cleaned.get("tags", ""))
            if not tags:
                raise ValidationError("Give at least one tag.")
            data["tags"] = [str(checked(lambda t: check.label(t, "tag"), tag)) for tag in tags]
        return data

    def target_queue(self, name: str) -> str:
        """An existing queue (a mistyped name would create a new queue for every job)."""
        if not name:
            raise ValidationError("Give the queue to move the jobs to.")
        checked(check.queue_name, name)
        if name not in self.queues:
            raise ValidationError(f"There is no queue {name!r}: move jobs to an existing queue.")
        return name

    @staticmethod
    def number(raw: str) -> float:
        """A finite priority."""
        try:
            value = float(raw)
        except ValueError:
            raise ValidationError(f"The priority must be a number, not {raw!r}.") from None
        return float(checked(lambda v: check.number(v, "priority"), value))


def parse_source(
    client: Client, query: Mapping[str, str], *, may_search_data: bool
) -> tuple[str, str, Selection]:
    """(source, in words, walk) of a list's or search's query; `ValueError` with the reason
    if bad."""
    if query.get("tracked"):
        return TRACKED, "tracked jobs", tracked_walk(client)
    try:
        job_filter = search_query.parse(query)
    except InvalidArgumentError as exc:
        raise ValueError(str(exc)) from None
    if job_filter.data_contains and not may_search_data:
        raise ValueError("selecting by job data needs the view_job_data permission")
    if job_filter.is_empty():
        raise ValueError("choose the jobs first: a queue tab, a failure group, a tag or a search")
    if job_filter.queue and job_filter.queue not in {q.name for q in client.queues()}:
        raise ValueError(f"there is no queue {job_filter.queue!r}")
    try:
        walk = selection_for(client, job_filter)
    except UnwalkableFilterError as exc:
        raise ValueError(str(exc)) from None
    return job_filter.query_string(), job_filter.describe(), walk


def walk_of(client: Client, source: str) -> Selection:
    """The walk of a stored run's selection."""
    if source == TRACKED:
        return tracked_walk(client)
    return selection_for(client, JobFilter.from_query(dict(parse_qsl(source))))


def collect(client: Client, run: bulk_runs.Run) -> None:
    """Walk a few bounded steps further, keeping the matches (and a cancel's dependents)."""
    walk = walk_of(client, run.source)
    started, cursor, matched = time.monotonic(), run.cursor, run.matched
    for _ in range(STEPS_PER_REQUEST):
        step = walk.step(cursor, min(STEP_LIMIT, MAX_JOBS - matched))
        jids = list(dict.fromkeys(step.jids))
        also = dependents(client, jids) if run.action == "cancel" else []
        done = step.done or matched + len(jids) >= MAX_JOBS
        bulk_runs.save_collected(client, run, jids, also, cursor=None if done else step.cursor,
                                 looked=step.looked, total=step.total)
        reloaded = bulk_runs.load(client, run.id)
        if done or reloaded is None or time.monotonic() - started > REQUEST_BUDGET:
            return
        run, cursor, matched = reloaded, step.cursor or "", reloaded.matched


def dependents(client: Client, jids: list[str]) -> list[str]:
    """The jobs waiting on `jids` and not among them, read `SLICE` jobs per call."""
    chosen = set(jids)
    found = (waiting_on(client, jids[i : i + SLICE]) for i in range(0, len(jids), SLICE))
    return [jid for part in found for jid in part if jid not in chosen]


def apply_chunk(ctx: PageContext, run: bulk_runs.Run) -> tuple[int, list[str]]:
    """Act on the next chunk, `SLICE` jobs per call, audit each job changed; (done,
    "jid: why not" lines)."""
    entry = BULK_ACTIONS[run.action]
    chunk = bulk_runs.next_chunk(ctx.client, run, CHUNK)
    outcome = Outcome()
    for start in range(0, len(chunk), SLICE):
        jids = chunk[start : start + SLICE]
        part = (cancel_slice(ctx, run, jids) if entry.slug == "cancel"
                else each_job(ctx, entry.action, {**run.data, "jids": jids}))
        outcome.changes += part.changes
        outcome.errors += part.errors
        outcome.done += part.done
    note = (f" (bulk run {run.id}, chunk {run.chunks + 1}: {plural(len(chunk), 'job')} of "
            f"{run.matched} matching {run.described})")
    audit.record(ctx, [dataclasses.replace(c, message=c.message + note) for c in outcome.changes],
                 deletion=entry.action.deletion)
    problems = [f"{jid}: {why}" for jid, why in outcome.errors]
    bulk_runs.save_applied(ctx.client, run, len(chunk), outcome.done, problems)
    return outcome.done, problems


def cancel_slice(ctx: PageContext, run: bulk_runs.Run, jids: list[str]) -> Outcome:
    """Cancel jobs with the jobs waiting on them (qless takes them only together, as a
    single cancel does); a matched job already cancelled that way is not reported."""
    along = waiting_on(ctx.client, jids)
    outcome = all_jobs(ctx, BULK_ACTIONS["cancel"].action, {"jids": jids + along})
    cancelled = {change.target for change in outcome.changes}
    bulk_runs.add_cancelled_along(ctx.client, run.id, [j for j in along if j in cancelled])
    missing = [jid for jid, why in outcome.errors if why == "no longer exists"]
    earlier = bulk_runs.cancelled_along(ctx.client, run.id, missing)
    outcome.errors = [(jid, why) for jid, why in outcome.errors if jid not in earlier]
    return outcome


def offer(query: Mapping[str, str], total: int | None) -> dict[str, Any]:
    """What a list's "Select all N matching" link needs: its selection and size (if known)."""
    return {"query": urlencode(dict(query)), "total": total}
