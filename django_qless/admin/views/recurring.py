"""Recurring job templates: list by queue, one template (last and next runs), edit, delete."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import RecurringJob
from .. import audit, permissions, presenters
from ..cron_rows import cron_rows
from ..feedback import confirm_page, confirmed, form_errors, invalid
from ..forms import JidForm, RecurringForm
from ..managed import managed_by_sync
from ..page_context import PageContext
from ..pagination import paginate
from .queues import recurring_rows

#: Next runs shown on a template's page.
NEXT_RUNS = 5


def recurring_list(ctx: PageContext) -> HttpResponse:
    """Cron schedules, then the recurring templates of one queue (the queues that have
    any are listed as tabs)."""
    queues = [q for q in ctx.client.queues() if q.recurring]
    names = [q.name for q in queues]
    selected = ctx.request.GET.get("queue", names[0] if names else "")
    context: dict[str, Any] = {"queues": queues, "selected": selected, "page": None,
                               "crons": cron_rows(ctx.client),
                               "can_run": ctx.can(permissions.RECURRING)}
    if selected in names:
        total = next(q.recurring for q in queues if q.name == selected)
        queue = ctx.client.existing_queue(selected)
        page = paginate(ctx.request, partial(queue.jobs, "recurring"), total)
        context["page"] = page.map(lambda jids: recurring_rows(ctx, jids))
    return ctx.render(
        "recurring_list.html", context, title="Recurring jobs", section="recurring_list"
    )


def initial(job: RecurringJob) -> dict[str, Any]:
    """The edit form's values for a template."""
    return {
        "jid": job.jid, "queue": job.queue_name, "interval": job.interval, "priority": job.priority,
        "retries": job.retries, "backlog": job.backlog, "tags": ", ".join(job.tags),
    }


def recurring_page(ctx: PageContext, jid: str, form: RecurringForm | None = None) -> HttpResponse:
    """One template: its fields, last and next runs, data (masked) and the edit form."""
    job = ctx.client.recurring(jid)
    if job is None:
        missing = {"message": f"No recurring job {jid!r}."}
        return ctx.render("error.html", missing, title="Not found", section="", status=404)
    data = presenters.pretty_data(job.raw_data) if ctx.can(permissions.VIEW_DATA) else None
    [row] = presenters.recurring_rows(ctx.client, [job], runs=NEXT_RUNS)
    context: dict[str, Any] = {
        "job": job, "row": row, "data": data, "managed": managed_by_sync(job),
        "form": form or RecurringForm(initial=initial(job)),
        "can_run": ctx.can(permissions.RECURRING),
    }
    crumbs = [("Recurring jobs", ctx.url("recurring_list")), (jid, None)]
    return ctx.render(
        "recurring.html", context, title=f"Recurring job {jid}", section="recurring_list",
        crumbs=crumbs,
    )


def update(ctx: PageContext) -> HttpResponse:
    """Save the edit form: interval, priority, retries, backlog, tags, data."""
    form = RecurringForm(ctx.request.POST)
    jid = ctx.request.POST.get("jid", "")
    if not form.is_valid():
        messages.error(ctx.request, f"Nothing was changed: {form_errors(form)}")
        if ctx.link("recurring", jid=jid) is None:
            return ctx.redirect_back(ctx.url("recurring_list"))
        return recurring_page(ctx, jid, form)
    job = ctx.client.recurring(form.cleaned_data["jid"])
    if job is None:
        messages.error(ctx.request, f"No recurring job {jid!r}.")
        return ctx.redirect_back(ctx.url("recurring_list"))
    before = {**initial(job), "tags": sorted(job.tags)}
    changes = apply_update(job, form.cleaned_data)
    message = f"Updated recurring job {job.jid}: {changes}"
    audit.record(ctx, [audit.Change(
        "recurring_update", Kind.RECURRING, job.jid, message,
        *changed_fields(before, form.cleaned_data),
    )])
    messages.success(ctx.request, f"Saved recurring job {job.jid}: {changes}.")
    return ctx.redirect_back(ctx.url("recurring", jid=job.jid))


def apply_update(job: RecurringJob, data: dict[str, Any]) -> str:
    """Write the changed fields; returns a description of them."""
    job.update(
        interval=data["interval"], priority=data["priority"], retries=data["retries"],
        backlog=data["backlog"], data=data["data_json"], queue=data["queue"],
    )
    old, new = set(job.tags), set(data["tags"])
    if new - old:
        job.tag(*sorted(new - old))
    if old - new:
        job.untag(*sorted(old - new))
    parts = [
        f"queue {data['queue']}", f"interval {data['interval']:g} s",
        f"priority {data['priority']:g}", f"retries {data['retries']}",
        f"backlog {data['backlog']}", f"tags [{', '.join(data['tags'])}]",
    ]
    if data["data_json"] is not None:
        parts.append("new data")
    return ", ".join(parts)


def changed_fields(
    old: dict[str, Any], data: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The edited fields that changed, before and after (the data only as "replaced": it
    may hold secrets, and the audit page is not masked)."""
    new = {**{name: data[name] for name in old if name in data and name != "jid"},
           "tags": sorted(data["tags"])}
    names = [name for name in new if new[name] != old.get(name)]
    before, after = {name: old.get(name) for name in names}, {name: new[name] for name in names}
    if data["data_json"] is not None:
        before["data"], after["data"] = "previous", "replaced"
    return before, after


def delete(ctx: PageContext) -> HttpResponse:
    """Delete a template after a confirmation page (jobs it already spawned stay)."""
    form = JidForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("recurring_list"))
    jid = form.cleaned_data["jid"]
    job = ctx.client.recurring(jid)
    if job is None:
        messages.error(ctx.request, f"No recurring job {jid!r}.")
        return ctx.redirect_back(ctx.url("recurring_list"))
    if not confirmed(ctx):
        return confirm_page(
            ctx, title="Delete a recurring job", fallback=ctx.url("recurring_list"),
            question=f"Delete recurring job {jid} ({job.klass}, every {job.interval:g} s "
            f"in queue {job.queue_name})? Jobs it already spawned stay.",
        )
    job.cancel()
    audit.record(ctx, [audit.Change(
        "recurring_delete", Kind.RECURRING, jid,
        f"Deleted recurring job {jid} ({job.klass}) of queue {job.queue_name}",
        before={"class": job.klass, "queue": job.queue_name, "interval": job.interval},
    )], deletion=True)
    messages.success(ctx.request, f"Deleted recurring job {jid}.")
    return ctx.redirect_back(ctx.url("recurring_list"))
