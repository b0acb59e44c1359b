"""Workers: the list, one worker's jobs, and forgetting a worker."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import presence
from .. import audit
from ..feedback import invalid
from ..forms import WorkerForm
from ..page_context import PageContext
from ..pagination import paginate_sequence
from ..worker_rows import worker_row, worker_rows
from .jobs import list_context


def worker_list(ctx: PageContext) -> HttpResponse:
    """Workers: live ones first, with host, pid, current job, counts and memory."""
    now = ctx.client.now()
    rows = worker_rows(ctx.client, now)
    page = paginate_sequence(ctx.request, rows)
    context = {"page": page, "now": now, "live_count": sum(row.live for row in rows),
               "silent_count": sum(row.silent for row in rows)}
    return ctx.render("workers.html", context, title="Workers", section="workers")


def worker_page(ctx: PageContext, name: str) -> HttpResponse:
    """One worker: what its process reports (ours) and the jobs it holds, live leases first."""
    held = ctx.client.workers.jobs(name)
    jids = [*held.jobs, *held.stalled]
    stalled = set(held.stalled)
    context: dict[str, Any] = {
        **list_context(ctx, paginate_sequence(ctx.request, jids)),
        "worker": name,
        "row": worker_row(ctx.client, name, ctx.client.now()),
        "stalled_count": len(stalled),
        "running_count": len(jids) - len(stalled),
    }
    crumbs = [("Workers", ctx.url("workers")), (name, None)]
    return ctx.render(
        "worker.html", context, title=f"Worker {name}", section="workers", crumbs=crumbs
    )


def forget(ctx: PageContext) -> HttpResponse:
    """Drop a worker from the list (its jobs keep their leases until they expire)."""
    form = WorkerForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("workers"))
    name = form.cleaned_data["name"]
    row = worker_row(ctx.client, name, ctx.client.now())
    if row is not None and row.live:
        messages.error(ctx.request, f"Worker {name} is still reporting: only a worker that "
                       "stopped reporting can be forgotten.")
        return ctx.redirect_back(ctx.url("workers"))
    ctx.client.workers.deregister(name)
    presence.forget(ctx.client, [name])
    audit.record(ctx, [audit.Change(
        "forget", Kind.WORKER, name, f"Forgot worker {name}",
        before={"listed": True}, after={"listed": False},
    )], deletion=True)
    messages.success(ctx.request, f"Forgot worker {name}.")
    return ctx.redirect_back(ctx.url("workers"))
