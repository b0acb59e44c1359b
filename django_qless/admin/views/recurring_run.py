"""Run now for a recurring template: one job put at once, its schedule untouched."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import QlessError, RecurringJob
from ...core.submission import PutOptions, Submission, submit
from .. import audit
from ..feedback import confirm_page, confirmed, invalid, problem_text
from ..forms import JidForm
from ..page_context import PageContext


def run_now_jid(template: str, token: str) -> str:
    """`<template jid>-now-<token>`: never a spawn's `<template jid>-<count>`."""
    return f"{template}-now-{token}"


def submission(job: RecurringJob, jid: str) -> Submission:
    """A job as the template would spawn it (klass, data, queue, priority, tags, retries);
    put only if the jid is free, so it never replaces a job."""
    return Submission(jid, job.klass, job.queue_name, job.raw_data, PutOptions(
        priority=job.priority, tags=job.tags, retries=job.retries, unique="any",
    ))


def run_now(ctx: PageContext) -> HttpResponse:
    """Put one job of a template now (after a confirmation); its next run stays as it is."""
    form = JidForm(ctx.request.POST)
    back = ctx.url("recurring_list")
    if not form.is_valid():
        return invalid(ctx, form, back)
    jid = form.cleaned_data["jid"]
    job = ctx.client.recurring(jid)
    if job is None:
        messages.error(ctx.request, f"No recurring job {jid!r}.")
        return ctx.redirect_back(back)
    if not confirmed(ctx):
        return confirm_page(
            ctx, title="Run a recurring job now", fallback=back,
            question=f"Put one {job.klass} job of recurring job {jid} in queue "
            f"{job.queue_name} now? Its scheduled runs stay as they are.",
        )
    try:
        [outcome] = submit(ctx.client, [submission(job, run_now_jid(jid, secrets.token_hex(8)))])
    except QlessError as exc:
        messages.error(ctx.request, f"Recurring job {jid} was not run: {problem_text(exc)}.")
        return ctx.redirect_back(back)
    if not outcome.created:
        messages.error(ctx.request, f"Job {outcome.jid} already exists; nothing was put.")
        return ctx.redirect_back(back)
    audit.record(ctx, [audit.Change(
        "recurring_run", Kind.RECURRING, jid,
        f"Ran recurring job {jid} now: job {outcome.jid} in queue {job.queue_name}",
        after={"job": outcome.jid, "queue": job.queue_name},
    )])
    messages.success(ctx.request, f"Put job {outcome.jid} of recurring job {jid}.")
    return ctx.redirect_back(back)
