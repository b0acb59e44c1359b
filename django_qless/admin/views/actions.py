"""The one view of every job action (POST only; each change audited with its values)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import DependencyError, Job, QlessError
from .. import audit
from ..feedback import confirm_page, confirmed, invalid, problem_text, report
from ..job_actions import Data, JobAction, Selection
from ..page_context import PageContext

Errors = list[tuple[str, str]]
#: Jobs an action changed: (jid, audit text, the audited fields before the change).
Changes = list[tuple[str, str, dict[str, Any]]]


@dataclass
class Outcome:
    """What an action did: audit entries, refusals, how many done, where to go after."""

    changes: list[audit.Change] = field(default_factory=list)
    errors: Errors = field(default_factory=list)
    done: int = 0
    #: Where to go without a usable `next` (None: the action's usual place).
    back: str | None = None


def run_job_action(ctx: PageContext, action: JobAction) -> HttpResponse:
    """Validate the form, ask first if the action says so, run it, log, report, go back."""
    form = action.form(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url(action.back or "overview"))
    data = form.cleaned_data
    if action.confirm is not None and not confirmed(ctx):
        also = action.confirm.also(ctx.client, data) if action.confirm.also else []
        return confirm_page(
            ctx, title=action.confirm.title, question=action.confirm.question(ctx.client, data),
            items=data.get("jids", ()), also=also, fallback=usual_place(ctx, action, data),
        )
    outcome = RUNNERS[action.selection](ctx, action, data)
    audit.record(ctx, outcome.changes, deletion=action.deletion)
    report(ctx, action.feedback(outcome.done, data), outcome.errors)
    return ctx.redirect_back(outcome.back or usual_place(ctx, action, data))


def usual_place(ctx: PageContext, action: JobAction, data: Data) -> str:
    """Where an action goes back to: its own page, else the job's page, else the overview."""
    if action.back:
        return ctx.url(action.back)
    jids = data["jids"] if "jids" in data else [data["jid"]]
    single = ctx.link("job", jid=jids[0]) if len(jids) == 1 else None
    return single or ctx.url("overview")


def fetch(ctx: PageContext, jids: list[str]) -> tuple[list[Job], Errors]:
    """The selected jobs, and an error for each one that no longer exists."""
    jobs = ctx.client.get_jobs(jids)
    found = {job.jid for job in jobs}
    return jobs, [(jid, "no longer exists") for jid in jids if jid not in found]


def refusal(action: JobAction, job: Job) -> str | None:
    """Why the action leaves a job alone because of its state (None: it applies)."""
    return None if job.state in action.states else action.refusal.format(state=job.state)


def apply(action: JobAction, jobs: list[Job], data: Data) -> tuple[Changes, Errors]:
    """Run the operation on each job; a refusal by qless is reported, not raised."""
    done: Changes = []
    errors: Errors = []
    for job in jobs:
        problem = refusal(action, job)
        if problem is None:
            # Worded and read before the change: an operation updates the job it is given.
            change = (job.jid, action.audit(job, data), audit.job_values(job, action.fields))
            try:
                action.operation(job, data)
            except QlessError as exc:
                problem = problem_text(exc)
        if problem:
            errors.append((job.jid, problem))
        else:
            done.append(change)
    return done, errors


def each_job(ctx: PageContext, action: JobAction, data: Data) -> Outcome:
    """Run the operation on each selected job."""
    jobs, errors = fetch(ctx, data["jids"])
    done, refused = apply(action, jobs, data)
    return Outcome(audited(ctx, action, done), errors + refused, len(done))


def one_job(ctx: PageContext, action: JobAction, data: Data) -> Outcome:
    """Run the operation on one job; without the job, go back to the overview."""
    job = ctx.client.get_job(data["jid"])
    if job is None:
        return Outcome(errors=[(data["jid"], "no longer exists")], back=ctx.url("overview"))
    done, refused = apply(action, [job], data)
    return Outcome(audited(ctx, action, done), refused, len(done))


def all_jobs(ctx: PageContext, action: JobAction, data: Data) -> Outcome:
    """Run the operation once on every selected job it applies to (all or none done)."""
    jobs, errors = fetch(ctx, data["jids"])
    checked = [(job, refusal(action, job)) for job in jobs]
    errors += [(job.jid, problem) for job, problem in checked if problem]
    wanted = [job for job, problem in checked if problem is None]
    # Worded and read before the change.
    changes = [(job.jid, action.audit(job, data), audit.job_values(job, action.fields))
               for job in wanted]
    if wanted:
        try:
            action.operation(ctx.client, wanted)
        except DependencyError:
            # A dependent appeared after the confirmation page listed them.
            errors += [(job.jid, "other jobs now depend on it; nothing was cancelled, try "
                        "again to see them") for job in wanted]
            changes = []
        except QlessError as exc:
            errors += [(job.jid, problem_text(exc)) for job in wanted]
            changes = []
    outcome = Outcome(audited(ctx, action, changes), errors, len(changes))
    outcome.back = ctx.url("overview")  # the jobs' pages are gone once they are deleted
    return outcome


def each_jid(ctx: PageContext, action: JobAction, data: Data) -> Outcome:
    """Run the operation on each selected jid, whether its job still exists or not."""
    jids = data["jids"]
    done = [jid for jid in jids if action.operation(ctx.client, jid)]
    errors = [(jid, action.refusal) for jid in jids if jid not in done]
    changes = [
        audit.Change(action.audit_action, Kind.JOB, jid, action.audit(jid, data),
                     before={"tracked": True}, after={"tracked": False})
        for jid in done
    ]
    return Outcome(changes, errors, len(done))


def whole_tag(ctx: PageContext, action: JobAction, data: Data) -> Outcome:
    """Run a bulk operation on every job with the tag: one audit entry for all."""
    tag = data["tag"]
    bulk = action.operation(ctx.client, tag)
    change = audit.Change(action.audit_action, Kind.TAG, tag, action.audit(bulk, data),
                          after={"jobs": bulk.done, "batches": bulk.batches})
    return Outcome([change] if bulk.done else [], bulk.errors, bulk.done)


def audited(ctx: PageContext, action: JobAction, done: Changes) -> list[audit.Change]:
    """Audit entries of the changed jobs, their fields read again (one call) for after."""
    after: dict[str, Job] = {}
    if done and action.fields and not action.deletion:
        after = {job.jid: job for job in ctx.client.get_jobs([jid for jid, _, _ in done])}
    # A cancelled job is gone: nothing to read back.
    gone = {"state": "cancelled"} if action.deletion else {}
    return [
        audit.Change(action.audit_action, Kind.JOB, jid, text, before=before,
                     after=audit.job_values(after[jid], action.fields) if jid in after else gone)
        for jid, text, before in done
    ]


RUNNERS: dict[Selection, Callable[[PageContext, JobAction, Data], Outcome]] = {
    Selection.EACH_JOB: each_job,
    Selection.ONE_JOB: one_job,
    Selection.ALL_JOBS: all_jobs,
    Selection.EACH_JID: each_jid,
    Selection.TAG: whole_tag,
}
