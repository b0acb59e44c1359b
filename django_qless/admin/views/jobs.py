"""Job pages: one job, completed, tracked, and jobs by tag (the search has its own module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect

from ...core import InvalidArgumentError, Job
from .. import bulk_all, job_info, permissions, presenters
from ..attempts import attempts_of
from ..dependency_graph import dependency_graph
from ..list_walks import completed_count
from ..page_context import PageContext
from ..pagination import Pagination, paginate, paginate_sequence
from ..presenters import TRACKED_STATES, tracked_counts


def list_context(ctx: PageContext, page: Pagination[str]) -> dict[str, Any]:
    """A page of jids as job rows, plus what the bulk-action bar needs."""
    now, redaction = ctx.client.now(), ctx.redaction()
    return {
        "page": page.map(
            lambda jids: presenters.job_rows(ctx.client.get_jobs(jids), now, redaction)
        ),
        "queue_names": [q.name for q in ctx.client.queues()],
    }


def job_page(ctx: PageContext, jid: str) -> HttpResponse:
    """One job: fields, kind, data, return value, attempts, history, failure, actions."""
    job = ctx.client.get_job(jid)
    if job is None:
        if ctx.client.recurring(jid) is not None:
            return HttpResponseRedirect(ctx.url("recurring", jid=jid))
        missing = {"message": f"No job {jid!r} (it may have been cancelled or expired)."}
        return ctx.render("error.html", missing, title="Job not found", section="", status=404)
    redaction = ctx.redaction()
    failure = job.failure if job.state == "failed" else None
    context: dict[str, Any] = {
        "job": job,
        "row": presenters.job_rows([job], ctx.client.now(), redaction)[0],
        **job_data(ctx, job),
        "attempts": attempts_of(job, redaction),
        "timeline": presenters.timeline(job.history, redaction),
        # A job waiting for a retry keeps its failure; its attempt row shows it instead.
        "failure": failure,
        "failure_message": redaction.text(failure.message) if failure else "",
        "failure_when": presenters.when(job.failure.when) if job.failure else None,
        "queue_names": [q.name for q in ctx.client.queues()],
        "graph": dependency_graph(ctx.client, job),
    }
    crumbs = job_crumbs(ctx, job)
    return ctx.render("job.html", context, title=f"Job {jid}", section="", crumbs=crumbs)


def job_data(ctx: PageContext, job: Job) -> dict[str, Any]:
    """The job's kind, and its data and return value (masked; None without the permission)."""
    data = job_info.decoded(job.raw_data)
    shown = ctx.can(permissions.VIEW_DATA)
    return {
        "kind": job_info.job_kind(job.klass, data),
        "has_result": job_info.has_result(data),
        "data": presenters.pretty_data(job.raw_data) if shown else None,
        "result": job_info.pretty_result(data) if shown else None,
    }


def job_crumbs(ctx: PageContext, job: Job) -> list[tuple[str, str | None]]:
    """Queues > queue > jid (or Completed > jid)."""
    if job.queue_name:
        return [
            ("Queues", ctx.url("queues")),
            (job.queue_name, ctx.link("queue", name=job.queue_name)),
            (job.jid, None),
        ]
    return [("Completed", ctx.url("completed")), (job.jid, None)]


def completed(ctx: PageContext) -> HttpResponse:
    """Recently completed jobs, newest first."""
    page = paginate(ctx.request, ctx.client.completed)
    context = {**list_context(ctx, page),
               "select_all": bulk_all.offer({"state": "complete"}, completed_count(ctx.client))}
    crumbs = [("Completed jobs", None)]
    return ctx.render(
        "job_list.html", context, title="Completed jobs", section="completed", crumbs=crumbs
    )


def tracked(ctx: PageContext) -> HttpResponse:
    """Tracked jobs, all or by state."""
    state = ctx.request.GET.get("state", "all")
    states = ctx.client.tracked_states()
    if state in (*TRACKED_STATES, "gone"):
        page = paginate_sequence(ctx.request, [jid for jid, s in states if s == state])
    else:
        state = "all"
        page = paginate(
            ctx.request, ctx.client.tracked_jids, ctx.client.tracked_count()
        )
    context: dict[str, Any] = {
        **list_context(ctx, page),
        "state": state,
        "counts": tracked_counts(states),
        "total": ctx.client.tracked_count(),
        "gone": page.items if state == "gone" else (),
        "select_all": bulk_all.offer({"tracked": "1"}, ctx.client.tracked_count())
        if state == "all" else None,
    }
    crumbs = [("Tracked jobs", None)]
    return ctx.render(
        "tracked.html", context, title="Tracked jobs", section="tracked", crumbs=crumbs
    )


def tagged(ctx: PageContext) -> HttpResponse:
    """Jobs carrying a tag, with bulk actions on all of them."""
    tag = ctx.request.GET.get("tag", "")
    try:
        total, _ = ctx.client.tagged_jids(tag, 0, 1)
    except InvalidArgumentError as exc:
        messages.error(ctx.request, str(exc))
        return HttpResponseRedirect(ctx.url("search"))

    def fetch(offset: int, count: int) -> Sequence[str]:
        return ctx.client.tagged_jids(tag, offset, count)[1]

    context = {**list_context(ctx, paginate(ctx.request, fetch, total)), "tag": tag, "total": total,
               "select_all": bulk_all.offer({"tag": tag}, total)}
    crumbs = [("Find jobs", ctx.url("search")), (f"Tag {tag}", None)]
    return ctx.render(
        "tagged.html", context, title=f"Jobs tagged {tag}", section="search", crumbs=crumbs
    )
