"""The search page: every job criterion in one form, matches found a bounded walk at a time."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse, HttpResponseRedirect

from ...core import InvalidArgumentError
from ...registry import registry
from .. import permissions, presenters, search_query
from ..filter_walk import FilterWalk
from ..page_context import PageContext
from ..pagination import Pagination
from ..search_results import PAGE_SIZE, ResultPage, result_page
from ..selection import START, STATES, JobFilter

TOP_TAGS = 50
#: Earlier pages' cursors a page's links carry, so "Previous" works (the oldest dropped).
MAX_BACK = 50


def search(ctx: PageContext) -> HttpResponse:
    """Find jobs by any criterion; a jid, recurring jid or tag in `q` goes straight there."""
    query = ctx.request.GET.get("q", "").strip()
    if query:
        return HttpResponseRedirect(find(ctx, query))
    context: dict[str, Any] = {
        "top_tags": ctx.client.top_tags(0, TOP_TAGS),
        "states": STATES,
        "queue_names": [q.name for q in ctx.client.queues()],
        "klasses": sorted(spec.name for spec in registry.all()),
    }
    try:
        job_filter = search_query.parse(ctx.request.GET)
        if job_filter.data_contains and not ctx.can(permissions.VIEW_DATA):
            raise InvalidArgumentError("searching job data needs the view_job_data permission")
        context["form"] = form_values(job_filter)
        if not job_filter.is_empty():
            context.update(results(ctx, job_filter))
    except InvalidArgumentError as exc:
        context["form"] = {**dict(ctx.request.GET.items()), "cursor": ""}
        context["error"] = str(exc)
        return ctx.render("search.html", context, title="Find jobs", section="search", status=400)
    return ctx.render("search.html", context, title="Find jobs", section="search")


def find(ctx: PageContext, query: str) -> str:
    """Where a top-bar query leads: its job or recurring job, else a search by tag or jid prefix."""
    # Free text: what cannot be a jid or a tag is simply not found.
    try:
        if ctx.client.get_job(query) is not None and (job := ctx.link("job", jid=query)):
            return job
        if ctx.client.recurring(query) is not None and (
            recurring := ctx.link("recurring", jid=query)
        ):
            return recurring
        tagged, _ = ctx.client.tagged_jids(query, 0, 1)
    except InvalidArgumentError:
        tagged = 0
    field = "tag" if tagged else "jid_prefix"
    return f"{ctx.url('search')}?{urlencode({field: query})}"


def form_values(job_filter: JobFilter) -> dict[str, str]:
    """The form's fields for a filter (its times as datetime-local values)."""
    return {
        **job_filter.query(),
        "since": search_query.local_input(job_filter.since),
        "until": search_query.local_input(job_filter.until),
    }


def results(ctx: PageContext, job_filter: JobFilter) -> dict[str, Any]:
    """One page of matches as job rows, how far the walk has looked, and its page links."""
    cursor = ctx.request.GET.get("cursor", START)
    back = ctx.request.GET.getlist("back")[-MAX_BACK:]
    found = result_page(FilterWalk(ctx.client, job_filter), cursor)
    jobs = ctx.client.get_jobs(found.jids)
    rows = presenters.job_rows(jobs, ctx.client.now(), ctx.redaction())
    return {
        "page": pages(job_filter, found, rows, cursor, back),
        "walk": found,
        "looked_text": f"{found.looked:,}",
        "total_text": "?" if found.total is None else f"{found.total:,}",
        "filter_text": job_filter.describe(),
        "tag_link": f"{ctx.url('tagged')}?{urlencode({'tag': job_filter.tag})}"
        if job_filter.tag else "",
    }


def pages(
    job_filter: JobFilter, found: ResultPage, rows: list[Any], cursor: str, back: list[str]
) -> Pagination[Any]:
    """The page's links: Next carries the walk's cursor, Previous the cursor before this one."""

    def link(at: str, earlier: list[str]) -> str:
        pairs = [*job_filter.query().items(), *(("back", c) for c in earlier)]
        if at:
            pairs.append(("cursor", at))
        return urlencode(pairs)

    ahead = [*back, cursor][-MAX_BACK:]
    return Pagination(
        items=rows,
        number=len(back) + 1,
        size=PAGE_SIZE,
        total=None,
        has_next=not found.done,
        query=link(cursor, back),
        previous_query=link(back[-1], back[:-1]) if back else "",
        next_query=link(found.cursor or "", ahead),
    )
