"""Act on all matching jobs: choose the action, collect the matches, confirm, apply in chunks.

Every step is a POST that does one bounded piece of work and goes back to the run's page;
`bulk.js` posts the next step by itself, and without it each "Continue" does one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect

from .. import bulk_all, bulk_runs, live_requests, permissions
from ..bulk_all import BULK_ACTIONS, BulkForm
from ..feedback import confirmed, form_errors, plural
from ..page_context import PageContext

#: The permissions of the actions offered; a user with none of them cannot start a run.
BULK_PERMS = (permissions.RETRY, permissions.CANCEL, permissions.EDIT)
#: The script that posts a run's next step by itself (`bulk.js`).
MEDIA = forms.Media(js=["django_qless/bulk.js"])
#: Dependents and matched jids shown on the confirmation.
SHOWN = 10


def offered(ctx: PageContext) -> list[bulk_all.BulkAction]:
    """The bulk actions the user may run (the permission of each single action)."""
    return [entry for entry in BULK_ACTIONS.values() if ctx.can(entry.action.perm)]


def may_start_any(ctx: PageContext) -> None:
    """403 for a user who may run none of the bulk actions."""
    if not any(ctx.can(perm) for perm in BULK_PERMS):
        raise PermissionDenied


def may_run(ctx: PageContext, slug: str) -> None:
    """403 for a user without the permission of the single action (an unknown action is
    refused by the form)."""
    if slug in BULK_ACTIONS and not ctx.can(BULK_ACTIONS[slug].action.perm):
        raise PermissionDenied


def choose(ctx: PageContext) -> HttpResponse:
    """The jobs a list or search selects, in words, and the actions to run on all of them."""
    query = {key: ctx.request.GET.get(key, "") for key in ctx.request.GET}
    query.pop("next", None)
    if not query:
        return ctx.render("bulk_choose.html", {"unchosen": True}, title="Act on all matching jobs",
                          section="", crumbs=[("Bulk runs", ctx.url("bulk_runs")),
                                              ("Act on all matching jobs", None)])
    try:
        source, described, walk = bulk_all.parse_source(
            ctx.client, query, may_search_data=ctx.can(permissions.VIEW_DATA))
    except ValueError as exc:
        problem = {"message": f"Cannot select these jobs: {exc}."}
        return ctx.render("error.html", problem, title="Act on all matching jobs", section="",
                          status=400)
    back = ctx.request.GET.get("next", "")
    context: dict[str, Any] = {
        "described": described,
        "estimate": getattr(walk, "total", None),
        "query": sorted(query.items()),
        "actions": offered(ctx),
        "queue_names": [q.name for q in ctx.client.queues()],
        "back_url": back if back and ctx.redirect_target_safe(back) else "",
        "max_jobs": bulk_all.MAX_JOBS,
        "source": source,
    }
    crumbs = [("Bulk runs", ctx.url("bulk_runs")), ("Act on all matching jobs", None)]
    return ctx.render("bulk_choose.html", context, title="Act on all matching jobs",
                      section="", crumbs=crumbs)


def start(ctx: PageContext) -> HttpResponse:
    """Check the action and selection (nothing written if either is bad), store the run,
    collect its first steps and show it."""
    may_start_any(ctx)
    post = ctx.request.POST
    may_run(ctx, post.get("action", ""))
    query = {key: post.get(key, "") for key in post if key.startswith("f_")}
    selection = {key.removeprefix("f_"): value for key, value in query.items()}
    fallback = f"{ctx.url('bulk_choose')}?{urlencode(selection)}"
    form = BulkForm(post, queues=[q.name for q in ctx.client.queues()])
    if not form.is_valid():
        messages.error(ctx.request, f"Nothing was changed: {form_errors(form)}")
        return HttpResponseRedirect(fallback)
    try:
        source, described, _ = bulk_all.parse_source(
            ctx.client, selection, may_search_data=ctx.can(permissions.VIEW_DATA))
    except ValueError as exc:
        messages.error(ctx.request, f"Nothing was changed: {exc}.")
        return HttpResponseRedirect(fallback)
    data = {key: value for key, value in form.cleaned_data.items() if key != "action"}
    back = post.get("back", "")
    run_id = bulk_runs.create(
        ctx.client, action=form.cleaned_data["action"], data=data, source=source,
        described=described, by=ctx.request.user.get_username(),
        back=back if back and ctx.redirect_target_safe(back) else "",
    )
    run = bulk_runs.load(ctx.client, run_id)
    if run is not None:
        with bulk_runs.claimed(ctx.client, run_id) as held:
            if held:
                bulk_all.collect(ctx.client, run)
    return HttpResponseRedirect(ctx.url("bulk_run", run_id=run_id))


def run_page(ctx: PageContext, run_id: str) -> HttpResponse:
    """A run: collecting, waiting for its confirmation, applying, or its outcome."""
    run = bulk_runs.load(ctx.client, run_id)
    if run is None:
        missing = {"message": f"No bulk run {run_id!r} (runs are kept 7 days)."}
        return ctx.render("error.html", missing, title="Bulk run not found", section="",
                          status=404)
    entry = BULK_ACTIONS[run.action]
    also_count, also = (bulk_runs.also_sample(ctx.client, run.id, SHOWN)
                        if run.action == "cancel" else (0, []))
    context: dict[str, Any] = {
        "run": run,
        "entry": entry,
        "argument": argument(run.data),
        "question": question(run, entry, also_count),
        "sample": bulk_runs.matched_sample(ctx.client, run.id, SHOWN)
        if run.phase == bulk_runs.READY else [],
        "also": also,
        "also_count": also_count,
        "problems": bulk_runs.problem_lines(ctx.client, run.id),
        "may_run": ctx.can(entry.action.perm),
        "capped": run.matched >= bulk_all.MAX_JOBS,
        "max_jobs": bulk_all.MAX_JOBS,
        "chunk": bulk_all.CHUNK,
        "auto": run.phase in (bulk_runs.COLLECT, bulk_runs.APPLY),
        # Every page's script, and the one that posts the next step.
        "qless_media": live_requests.MEDIA + MEDIA,
    }
    title = f"Bulk run {run.id}"
    crumbs = [("Bulk runs", ctx.url("bulk_runs")), (run.id, None)]
    return ctx.render("bulk_run.html", context, title=title, section="", crumbs=crumbs)


def argument(data: Any) -> str:
    """An action's input in words, after its label ("q", "to 5", "a, b")."""
    if "queue" in data:
        return str(data["queue"])
    if "priority" in data:
        return f"to {data['priority']:g}"
    if "tags" in data:
        return ", ".join(data["tags"])
    return ""


def question(run: bulk_runs.Run, entry: bulk_all.BulkAction, also: int) -> str:
    """The confirmation: the action, the exact count and the filter in words."""
    what = f"{entry.label} {argument(run.data)}".strip()
    text = f"{what}: all {plural(run.matched, 'job')} matching {run.described}?"
    if also:
        text += f" {plural(also, 'job')} waiting on them {'is' if also == 1 else 'are'} " \
                "cancelled with them."
    return text


def posted_run(ctx: PageContext) -> bulk_runs.Run | HttpResponse:
    """The run a step or an abandon names, once the user may act on it; else where to go."""
    may_start_any(ctx)
    run_id = ctx.request.POST.get("run", "")
    run = bulk_runs.load(ctx.client, run_id)
    if run is None:
        messages.error(ctx.request, f"No bulk run {run_id!r}: nothing was changed.")
        return HttpResponseRedirect(ctx.url("bulk_runs"))
    may_run(ctx, run.action)
    return run


def step(ctx: PageContext) -> HttpResponse:
    """Do the next step of a run: collect further, or apply the next chunk once confirmed."""
    run = posted_run(ctx)
    if isinstance(run, HttpResponse):
        return run
    here = ctx.url("bulk_run", run_id=run.id)
    if run.finished:
        messages.info(ctx.request, f"Bulk run {run.id} is {run.phase}: nothing more to do.")
        return HttpResponseRedirect(here)
    if run.phase == bulk_runs.READY and not confirmed(ctx):
        messages.error(ctx.request, "Confirm the run first: nothing was changed.")
        return HttpResponseRedirect(here)
    with bulk_runs.claimed(ctx.client, run.id) as held:
        # Read again under the lock: a step another page finished meanwhile has moved it on.
        fresh = bulk_runs.load(ctx.client, run.id) if held else None
        if fresh is None:
            messages.warning(ctx.request, "Another page is running this step; try again.")
        elif fresh.finished:
            messages.info(ctx.request, f"Bulk run {run.id} is {fresh.phase}: nothing more to do.")
        elif fresh.phase == bulk_runs.COLLECT:
            bulk_all.collect(ctx.client, fresh)
        else:
            bulk_all.apply_chunk(ctx, fresh)
    return HttpResponseRedirect(here)


def abandon(ctx: PageContext) -> HttpResponse:
    """Stop a run where it is: the jobs already acted on stay as they are."""
    run = posted_run(ctx)
    if isinstance(run, HttpResponse):
        return run
    if not run.finished:
        bulk_runs.set_phase(ctx.client, run.id, bulk_runs.ABANDONED)
        messages.success(ctx.request, f"Abandoned bulk run {run.id} after "
                         f"{plural(run.done, 'job')} {BULK_ACTIONS[run.action].done}.")
    return HttpResponseRedirect(ctx.url("bulk_run", run_id=run.id))


def runs(ctx: PageContext) -> HttpResponse:
    """The bulk runs of the last 7 days, unfinished ones to resume or abandon."""
    rows = [(run, BULK_ACTIONS[run.action], ctx.can(BULK_ACTIONS[run.action].action.perm))
            for run in bulk_runs.recent(ctx.client) if run.action in BULK_ACTIONS]
    context = {"rows": rows}
    return ctx.render("bulk_runs.html", context, title="Bulk runs", section="")
