"""Actions on one job or a selection of jobs (POST only; each logged to the admin log)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.http import HttpResponse

from ... import models
from ...core import Job, QlessError
from .. import audit, bulk, permissions
from ..env import Env
from ..feedback import confirm_page, confirmed, invalid, plural, report
from ..forms import JidsForm, MoveForm, PriorityForm, TagForm, TagsForm, UndependForm
from ..queries import TRACKED_KEY, get_job, tag_jids
from ..routes import A, action

#: An action on one job: returns None when done, or why it was not done.
JobAction = Callable[[Job, dict[str, Any]], str | None]
Errors = list[tuple[str, str]]


def fetch(env: Env, jids: list[str]) -> tuple[list[Job], Errors]:
    """The selected jobs, and an error for each one that no longer exists."""
    jobs = env.client.get_jobs(jids)
    found = {job.jid for job in jobs}
    return jobs, [(jid, "no longer exists") for jid in jids if jid not in found]


def apply(jobs: list[Job], act: JobAction, data: dict[str, Any]) -> tuple[list[Job], Errors]:
    """Run an action on each job; a refusal by qless is reported, not raised."""
    done: list[Job] = []
    errors: Errors = []
    for job in jobs:
        try:
            problem = act(job, data)
        except QlessError as exc:
            problem = str(exc)
        if problem:
            errors.append((job.jid, problem))
        else:
            done.append(job)
    return done, errors


def fallback_url(env: Env, jids: list[str]) -> str:
    """Where to go after an action without a usable `next`: the job, else the overview."""
    single = env.link("job", jid=jids[0]) if len(jids) == 1 else None
    return single or env.url("overview")


def run(
    env: Env,
    form_class: type[forms.Form],
    act: JobAction,
    *,
    verb: str,
    describe: Callable[[Job, dict[str, Any]], str],
) -> HttpResponse:
    """Validate the form, apply the action to every selected job, log and report."""
    form = form_class(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("overview"))
    data = form.cleaned_data
    jobs, errors = fetch(env, data["jids"])
    done, refused = apply(jobs, act, data)
    audit.record(env, models.Job, [(job.jid, describe(job, data)) for job in done])
    report(env, f"{verb} {plural(len(done), 'job')}." if done else None, errors + refused)
    return env.redirect_back(fallback_url(env, data["jids"]))


def _retry(job: Job, data: dict[str, Any]) -> str | None:
    if job.state != "failed":
        return f"is {job.state}, not failed"
    job.requeue()
    return None


def retry(env: Env) -> HttpResponse:
    """Put failed jobs back into their queue."""
    return run(env, JidsForm, _retry, verb="Retried",
               describe=lambda job, _: f"Retried job {job.jid} in queue {job.queue_name}")


def _timeout(job: Job, data: dict[str, Any]) -> str | None:
    if job.state != "running":
        return f"is {job.state}, not running"
    job.timeout()
    return None


def timeout(env: Env) -> HttpResponse:
    """End running jobs' leases now, so another worker picks them up."""
    return run(env, JidsForm, _timeout, verb="Timed out",
               describe=lambda job, _: f"Timed out job {job.jid} held by worker {job.worker}")


def _move(job: Job, data: dict[str, Any]) -> str | None:
    job.move(data["queue"])
    return None


def move(env: Env) -> HttpResponse:
    """Requeue jobs into another queue (data, priority and tags kept)."""
    return run(env, MoveForm, _move, verb="Moved", describe=lambda job, data: (
        f"Moved job {job.jid} from queue {job.queue_name or '-'} to queue {data['queue']}"))


def _priority(job: Job, data: dict[str, Any]) -> str | None:
    job.set_priority(data["priority"])
    return None


def set_priority(env: Env) -> HttpResponse:
    """Change jobs' priority."""
    return run(env, PriorityForm, _priority, verb="Changed the priority of",
               describe=lambda job, data: (
                   f"Set priority of job {job.jid} from {job.priority:g} to {data['priority']:g}"))


def _tag(job: Job, data: dict[str, Any]) -> str | None:
    job.tag(*data["tags"])
    return None


def add_tags(env: Env) -> HttpResponse:
    """Add tags to jobs."""
    return run(env, TagsForm, _tag, verb="Tagged", describe=lambda job, data: (
        f"Tagged job {job.jid} with {', '.join(data['tags'])}"))


def _untag(job: Job, data: dict[str, Any]) -> str | None:
    job.untag(*data["tags"])
    return None


def remove_tags(env: Env) -> HttpResponse:
    """Remove tags from jobs."""
    return run(env, TagsForm, _untag, verb="Untagged", describe=lambda job, data: (
        f"Removed tags {', '.join(data['tags'])} from job {job.jid}"))


def _track(job: Job, data: dict[str, Any]) -> str | None:
    job.track()
    return None


def track(env: Env) -> HttpResponse:
    """Track jobs (their events go to the per-event channels)."""
    return run(env, JidsForm, _track, verb="Tracked",
               describe=lambda job, _: f"Tracked job {job.jid}")


def untrack(env: Env) -> HttpResponse:
    """Stop tracking jids (also those whose job is gone)."""
    form = JidsForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("tracked"))
    jids = form.cleaned_data["jids"]
    done = [jid for jid in jids if untrack_one(env, jid)]
    errors = [(jid, "was not tracked") for jid in jids if jid not in done]
    audit.record(env, models.Job, [(jid, f"Stopped tracking job {jid}") for jid in done])
    report(env, f"Untracked {plural(len(done), 'job')}." if done else None, errors)
    return env.redirect_back(env.url("tracked"))


def untrack_one(env: Env, jid: str) -> bool:
    """Stop tracking a jid; False if it was not tracked."""
    if get_job(env.client, jid) is None:
        # The script refuses to untrack a jid whose job is gone, so such entries would
        # stay in `ql:tracked` for ever; removing the dangling entry is all untrack does.
        return bool(env.client.redis.zrem(TRACKED_KEY, jid))
    # The reply is the JSON text "1" or "0".
    return bool(json.loads(env.client.call("track", "untrack", jid)))


def undepend(env: Env) -> HttpResponse:
    """Stop a job (in state depends) waiting for one of its dependencies."""
    form = UndependForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("overview"))
    jid, dependency = form.cleaned_data["jid"], form.cleaned_data["dependency"]
    job = env.client.get_job(jid)
    if job is None:
        report(env, None, [(jid, "no longer exists")])
        return env.redirect_back(env.url("overview"))
    try:
        job.undepend(dependency)
    except QlessError as exc:
        report(env, None, [(jid, str(exc))])
    else:
        audit.record(env, models.Job, [(jid, f"Removed dependency {dependency} of job {jid}")])
        report(env, f"Job {jid} no longer waits for {dependency}.", [])
    return env.redirect_back(fallback_url(env, [jid]))


def cancel(env: Env) -> HttpResponse:
    """Delete jobs, after a confirmation page (completed jobs are left alone)."""
    form = JidsForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("overview"))
    jids = form.cleaned_data["jids"]
    if not confirmed(env):
        return confirm_page(
            env, title="Cancel jobs", question=f"Cancel {plural(len(jids), 'job')}?",
            items=jids, fallback=fallback_url(env, jids),
        )
    jobs, errors = fetch(env, jids)
    errors += [(job.jid, "is complete, not cancelled") for job in jobs if job.state == "complete"]
    wanted = [job for job in jobs if job.state != "complete"]
    done = cancel_jobs(env, wanted, errors)
    report(env, f"Cancelled {plural(len(done), 'job')}." if done else None, errors)
    return env.redirect_back(env.url("overview"))


def cancel_jobs(env: Env, jobs: list[Job], errors: Errors) -> list[Job]:
    """Cancel jobs in one go (qless refuses it all if a dependent is left out); log them."""
    if not jobs:
        return []
    try:
        env.client.cancel(*(job.jid for job in jobs))
    except QlessError as exc:
        errors += [(job.jid, str(exc)) for job in jobs]
        return []
    audit.record(env, models.Job, [
        (job.jid, f"Cancelled job {job.jid} ({job.klass}, {job.state} in queue "
                  f"{job.queue_name or '-'})")
        for job in jobs
    ], deletion=True)
    return jobs


def retry_tagged(env: Env) -> HttpResponse:
    """Requeue every failed job carrying a tag."""
    form = TagForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("search"))
    tag = form.cleaned_data["tag"]
    outcome = bulk.retry_tagged(env.client, tag)
    message = f"Retried {plural(outcome.done, 'failed job')} tagged {tag}"
    if outcome.done:
        audit.record(env, models.Job, [(f"tag:{tag}", message)])
    report(env, f"{message}." if outcome.done else f"No failed job tagged {tag}.", outcome.errors)
    return env.redirect_back(env.url("search"))


def cancel_tagged(env: Env) -> HttpResponse:
    """Cancel every job carrying a tag, after a confirmation page."""
    form = TagForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("search"))
    tag = form.cleaned_data["tag"]
    if not confirmed(env):
        total, _ = tag_jids(env.client, tag, 0, 1)
        return confirm_page(
            env, title="Cancel jobs by tag", fallback=env.url("search"),
            question=f"Cancel all {plural(total, 'job')} tagged {tag}?",
        )
    outcome = bulk.cancel_tagged(env.client, tag)
    message = f"Cancelled {plural(outcome.done, 'job')} tagged {tag}"
    if outcome.done:
        audit.record(env, models.Job, [(f"tag:{tag}", message)], deletion=True)
    report(env, f"{message}." if outcome.done else None, outcome.errors)
    return env.redirect_back(env.url("search"))


ACTIONS = [
    action(A + "retry/", retry, "job_retry", permissions.RETRY),
    action(A + "timeout/", timeout, "job_timeout", permissions.RETRY),
    action(A + "cancel/", cancel, "job_cancel", permissions.CANCEL),
    action(A + "move/", move, "job_move", permissions.EDIT),
    action(A + "priority/", set_priority, "job_priority", permissions.EDIT),
    action(A + "tag/", add_tags, "job_tag", permissions.EDIT),
    action(A + "untag/", remove_tags, "job_untag", permissions.EDIT),
    action(A + "track/", track, "job_track", permissions.EDIT),
    action(A + "untrack/", untrack, "job_untrack", permissions.EDIT),
    action(A + "undepend/", undepend, "job_undepend", permissions.EDIT),
    action(A + "tag-retry/", retry_tagged, "tag_retry", permissions.RETRY),
    action(A + "tag-cancel/", cancel_tagged, "tag_cancel", permissions.CANCEL),
]
