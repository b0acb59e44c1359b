"""Queue pages (list, one queue with its tabs) and queue actions (pause, settings)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from functools import partial

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import QueueCounts, Stats, pause_times
from ...core.fn_metrics import read_histograms
from ...core.latency import latencies
from .. import audit, bulk_all, presenters, stats_charts, stuck
from ..charts import ms_histogram
from ..feedback import invalid
from ..forms import QueueForm, QueueSettingsForm
from ..page_context import PageContext
from ..pagination import paginate

TABS = ("stats", "running", "waiting", "scheduled", "stalled", "depends", "recurring")


def queue_list(ctx: PageContext) -> HttpResponse:
    """Every queue with its counts."""
    queues = ctx.client.queues()
    context = {"queues": queues, "latencies": latencies(ctx.client, [q.name for q in queues])}
    return ctx.render("queues.html", context, title="Queues", section="queues")


def queue_page(ctx: PageContext, name: str) -> HttpResponse:
    """One queue: counts, today's failures, settings, and the selected tab."""
    counts = ctx.client.existing_queue(name).counts()
    tab = ctx.request.GET.get("tab") or first_tab(counts)
    tab = tab if tab in TABS else "stats"
    day = stats_day(ctx.request.GET.get("date", ""), ctx.client.now())
    stats = ctx.client.existing_queue(name).stats(day.timestamp())
    context = {
        "queue": counts,
        "tab": tab,
        "tabs": [(t, tab_count(counts, t)) for t in TABS],
        "stats": stats,
        "day": day,
        "settings": queue_settings(ctx, name),
        "latency_threshold": stuck.threshold_of(ctx.client, name),
        "tab_context": tab_context(ctx, counts, tab, stats),
        "queue_names": [q.name for q in ctx.client.queues()],
        "select_all": bulk_all.offer({"queue": name, "state": tab}, tab_count(counts, tab) or 0)
        if tab not in ("stats", "recurring") else None,
    }
    crumbs = [("Queues", ctx.url("queues")), (name, None)]
    return ctx.render("queue.html", context, title=f"Queue {name}", section="queues", crumbs=crumbs)


def stats_day(text: str, now: float) -> datetime.datetime:
    """Noon (UTC) of the `?date=YYYY-MM-DD` day, today when absent or malformed."""
    try:
        date = datetime.date.fromisoformat(text)
    except ValueError:
        date = datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).date()
    return datetime.datetime.combine(date, datetime.time(12), tzinfo=datetime.timezone.utc)


def first_tab(counts: QueueCounts) -> str:
    """The tab a queue opens on: the first that lists jobs, else the stats."""
    return next((tab for tab in TABS[1:] if tab_count(counts, tab)), "stats")


def tab_count(counts: QueueCounts, tab: str) -> int | None:
    """How many jobs a tab lists (None for the stats tab)."""
    return None if tab == "stats" else int(getattr(counts, tab))


def recorded_histograms(ctx: PageContext, name: str) -> dict[str, object]:
    """`run_ms`/`wait_ms`: millisecond histograms of the queue's last 24 hours, where
    `qless_worker` processes recorded them."""
    window = read_histograms(ctx.client.redis, "24h", ctx.client.now())
    run, wait = window.queue(name)
    charts: dict[str, object] = {}
    if any(run):
        charts["run_ms"] = ms_histogram(
            f"Run time of the jobs of queue {name} over the last 24 hours, in milliseconds", run)
    if any(wait):
        charts["wait_ms"] = ms_histogram(
            f"Wait time of the jobs of queue {name} over the last 24 hours, in milliseconds",
            wait)
    return charts


def tab_context(ctx: PageContext, counts: QueueCounts, tab: str, stats: Stats) -> dict[str, object]:
    """What the selected tab shows: charts, or one page of its jobs."""
    if tab == "stats":
        # qless's own histograms; `wait_ms`/`run_ms` (`stats_charts.ms_histogram` charts)
        # are drawn above them wherever millisecond histograms are recorded.
        return {"wait": stats_charts.qless_histogram(
                    f"Wait time of the jobs of queue {counts.name}, by whole second",
                    stats.wait.histogram),
                "run": stats_charts.qless_histogram(
                    f"Run time of the jobs of queue {counts.name}, by whole second",
                    stats.run.histogram),
                **recorded_histograms(ctx, counts.name)}
    total = tab_count(counts, tab) or 0
    queue = ctx.client.existing_queue(counts.name)
    # Waiting jobs are listed in pop order from the work set; the script pages the others.
    fetch = queue.waiting if tab == "waiting" else partial(queue.jobs, tab)
    page = paginate(ctx.request, fetch, total)
    if tab == "recurring":
        return {"page": page.map(lambda jids: recurring_rows(ctx, jids))}
    now, redaction = ctx.client.now(), ctx.redaction()
    return {"page": page.map(
        lambda jids: presenters.job_rows(ctx.client.get_jobs(jids), now, redaction)
    )}


def recurring_rows(ctx: PageContext, jids: Sequence[str]) -> list[presenters.RecurringRow]:
    """Recurring templates by jid (skipping any deleted meanwhile)."""
    found = (ctx.client.recurring(jid) for jid in jids)
    return presenters.recurring_rows(ctx.client, [job for job in found if job is not None])


def queue_settings(ctx: PageContext, name: str) -> dict[str, str | None]:
    """The queue's own lease length and concurrency limit, and the global lease length."""
    values = ctx.client.config.as_text()
    return {
        "heartbeat": values.get(f"{name}-heartbeat"),
        "default_heartbeat": values.get("heartbeat"),
        "max_concurrency": values.get(f"{name}-max-concurrency"),
    }


def pause(ctx: PageContext) -> HttpResponse:
    """Stop handing out the queue's jobs."""
    return set_paused(ctx, paused=True)


def unpause(ctx: PageContext) -> HttpResponse:
    """Resume handing out the queue's jobs."""
    return set_paused(ctx, paused=False)


def set_paused(ctx: PageContext, *, paused: bool) -> HttpResponse:
    """Pause or unpause one queue, log it, and go back."""
    form = QueueForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("queues"))
    name = form.cleaned_data["queue"]
    queue = ctx.client.queue(name)
    verb = "Paused" if paused else "Unpaused"
    was_paused = queue.paused
    if paused:
        queue.pause()
        # qless keeps no pause time: the overview's "What is stuck" reads this one.
        pause_times.record_pause(ctx.client, name, ctx.client.now())
    else:
        queue.unpause()
        pause_times.record_unpause(ctx.client, name)
    audit.record(ctx, [audit.Change(
        "pause" if paused else "unpause", Kind.QUEUE, name, f"{verb} queue {name}",
        before={"paused": was_paused}, after={"paused": paused},
    )])
    messages.success(ctx.request, f"{verb} queue {name}.")
    return ctx.redirect_back(ctx.url("queue", name=name))


def save_settings(ctx: PageContext) -> HttpResponse:
    """Store a queue's heartbeat and max-concurrency (blank: back to the default)."""
    form = QueueSettingsForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("queues"))
    name = form.cleaned_data["queue"]
    heartbeat = form.cleaned_data["heartbeat"]
    limit = form.cleaned_data["max_concurrency"] or None
    queue = ctx.client.queue(name)
    old = queue_settings(ctx, name)
    queue.heartbeat = heartbeat
    queue.max_concurrency = limit
    shown = (
        f"heartbeat {'default' if heartbeat is None else f'{heartbeat:g} s'}, "
        f"max concurrency {'unlimited' if limit is None else limit}"
    )
    audit.record(ctx, [audit.Change(
        "queue_settings", Kind.QUEUE, name, f"Set queue {name}: {shown}",
        before={"heartbeat": old["heartbeat"], "max concurrency": old["max_concurrency"]},
        after={"heartbeat": heartbeat, "max concurrency": limit},
    )])
    messages.success(ctx.request, f"Queue {name}: {shown}.")
    return ctx.redirect_back(ctx.url("queue", name=name))
