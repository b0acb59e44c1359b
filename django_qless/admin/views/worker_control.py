"""Worker control: ask one worker process to pause, resume or stop (`core.control`)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import control
from .. import audit
from ..feedback import confirm_page, confirmed, invalid
from ..forms import WorkerControlForm
from ..page_context import PageContext
from ..worker_rows import worker_row

#: What the worker does once it hears each order, for the message and the audit log.
DONE = {
    control.PAUSE: "it pops no more jobs; the jobs it runs go on",
    control.RESUME: "it pops jobs again",
    control.STOP: "it pops no more jobs, finishes those it runs within its shutdown "
                  "timeout, hands back the rest and exits",
}
#: The state the audit log records after each order.
AFTER = {control.PAUSE: "paused", control.RESUME: "popping", control.STOP: "stopping"}


def control_action(ctx: PageContext) -> HttpResponse:
    """Publish an order on the worker's control channel (stop after a confirmation); say
    when no process heard it, and audit it when one did."""
    form = WorkerControlForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("workers"))
    name, order = form.cleaned_data["name"], form.cleaned_data["action"]
    back = ctx.url("worker", name=name)
    if order == control.STOP and not confirmed(ctx):
        return confirm_page(
            ctx, title="Stop a worker", fallback=back,
            question=f"Stop worker {name}? It pops no more jobs, finishes those it runs "
            "within its shutdown timeout, hands back the rest and exits (under "
            "--processes, its supervisor starts a new process in its place).",
        )
    row = worker_row(ctx.client, name, ctx.client.now())
    before = row.presence.paused_by if row is not None and row.presence is not None else ""
    user = ctx.request.user.get_username()
    heard = control.send(ctx.client, name, order, user)
    if not heard:
        messages.error(ctx.request, f"The request to {order} worker {name} reached no one: "
                       "no qless_worker process of that name is listening (it has stopped, "
                       "or it is another qless client's worker). Nothing was changed.")
        return ctx.redirect_back(back)
    audit.record(ctx, [audit.Change(
        f"worker_{order}", Kind.WORKER, name, f"Asked worker {name} to {order}",
        before={"state": f"paused by {before}" if before else "popping"},
        after={"state": f"paused by {user}" if order == control.PAUSE else AFTER[order]},
    )])
    messages.success(ctx.request, f"Asked worker {name} to {order}: {DONE[order]}.")
    return ctx.redirect_back(back)
