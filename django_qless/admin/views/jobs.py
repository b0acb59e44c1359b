"""Job pages: search, one job, completed, tracked, and jobs by tag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect

from ...core import InvalidArgumentError, Job
from .. import permissions, presenters
from ..env import Env
from ..pagination import Pagination, paginate, paginate_sequence
from ..queries import (
    TRACKED_STATES,
    get_job,
    get_jobs,
    get_recurring,
    tag_jids,
    tracked_counts,
    tracked_jids,
    tracked_states,
    tracked_total,
)

TOP_TAGS = 50


def list_context(env: Env, page: Pagination[str]) -> dict[str, Any]:
    """A page of jids as job rows, plus what the bulk-action bar needs."""
    now = env.client.now()
    return {
        "page": page.map(lambda jids: presenters.job_rows(get_jobs(env.client, jids), now)),
        "queue_names": [q.name for q in env.client.queues()],
    }


def search(env: Env) -> HttpResponse:
    """Find a job or recurring job by jid, else jobs by tag; lists the most used tags."""
    query = env.request.GET.get("q", "").strip()
    if query:
        found = find(env, query)
        if found is not None:
            return HttpResponseRedirect(found)
        messages.warning(env.request, f"No job, recurring job or tag {query!r} found.")
    context = {"query": query, "top_tags": env.client.top_tags(0, TOP_TAGS)}
    return env.render("search.html", context, title="Find jobs", section="search")


def find(env: Env, query: str) -> str | None:
    """URL of the job, recurring job or tag named `query`, if there is one."""
    if get_job(env.client, query) is not None:
        return env.link("job", jid=query)
    if get_recurring(env.client, query) is not None:
        return env.link("recurring", jid=query)
    try:
        total, _ = tag_jids(env.client, query, 0, 1)
    except InvalidArgumentError:
        return None
    return f"{env.url('tagged')}?{urlencode({'tag': query})}" if total else None


def job_page(env: Env, jid: str) -> HttpResponse:
    """One job: fields, data, history timeline, failure, dependencies, actions."""
    job = get_job(env.client, jid)
    if job is None:
        if get_recurring(env.client, jid) is not None:
            return HttpResponseRedirect(env.url("recurring", jid=jid))
        missing = {"message": f"No job {jid!r} (it may have been cancelled or expired)."}
        return env.render("error.html", missing, title="Job not found", section="", status=404)
    context: dict[str, Any] = {
        "job": job,
        "row": presenters.job_row(job, env.client.now()),
        "data": job_data(env, job),
        "timeline": presenters.timeline(job.history),
        "failure_when": presenters.when(job.failure.when) if job.failure else None,
        "queue_names": [q.name for q in env.client.queues()],
    }
    crumbs = job_crumbs(env, job)
    return env.render("job.html", context, title=f"Job {jid}", section="", crumbs=crumbs)


def job_data(env: Env, job: Job) -> str | None:
    """The job's data for display (masked), or None without the permission to see it."""
    if not env.can(permissions.VIEW_DATA):
        return None
    return presenters.pretty_data(job.raw_data)


def job_crumbs(env: Env, job: Job) -> list[tuple[str, str | None]]:
    """Queues > queue > jid (or Completed > jid)."""
    if job.queue_name:
        return [
            ("Queues", env.url("queues")),
            (job.queue_name, env.link("queue", name=job.queue_name)),
            (job.jid, None),
        ]
    return [("Completed", env.url("completed")), (job.jid, None)]


def completed(env: Env) -> HttpResponse:
    """Recently completed jobs, newest first."""
    page = paginate(env.request, env.client.completed)
    context = list_context(env, page)
    crumbs = [("Completed jobs", None)]
    return env.render(
        "job_list.html", context, title="Completed jobs", section="completed", crumbs=crumbs
    )


def tracked(env: Env) -> HttpResponse:
    """Tracked jobs, all or by state."""
    state = env.request.GET.get("state", "all")
    states = tracked_states(env.client)
    if state in (*TRACKED_STATES, "gone"):
        page = paginate_sequence(env.request, [jid for jid, s in states if s == state])
    else:
        state = "all"
        page = paginate(
            env.request, lambda o, c: tracked_jids(env.client, o, c), tracked_total(env.client)
        )
    context: dict[str, Any] = {
        **list_context(env, page),
        "state": state,
        "counts": tracked_counts(states),
        "total": tracked_total(env.client),
        "gone": page.items if state == "gone" else (),
    }
    crumbs = [("Tracked jobs", None)]
    return env.render(
        "tracked.html", context, title="Tracked jobs", section="tracked", crumbs=crumbs
    )


def tagged(env: Env) -> HttpResponse:
    """Jobs carrying a tag, with bulk actions on all of them."""
    tag = env.request.GET.get("tag", "")
    try:
        total, _ = tag_jids(env.client, tag, 0, 1)
    except InvalidArgumentError as exc:
        messages.error(env.request, str(exc))
        return HttpResponseRedirect(env.url("search"))

    def fetch(offset: int, count: int) -> Sequence[str]:
        return tag_jids(env.client, tag, offset, count)[1]

    context = {**list_context(env, paginate(env.request, fetch, total)), "tag": tag, "total": total}
    crumbs = [("Find jobs", env.url("search")), (f"Tag {tag}", None)]
    return env.render(
        "tagged.html", context, title=f"Jobs tagged {tag}", section="search", crumbs=crumbs
    )
