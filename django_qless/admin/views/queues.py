"""Queue pages (list, one queue with its tabs) and queue actions (pause, settings)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from django.contrib import messages
from django.http import HttpResponse

from ... import models
from ...core import QueueCounts, Stats
from .. import audit, presenters
from ..env import Env
from ..feedback import invalid
from ..forms import QueueForm, QueueSettingsForm
from ..pagination import paginate
from ..queries import (
    config_values,
    get_jobs,
    get_recurring,
    queue_counts,
    queue_jids,
    queue_stats,
)

TABS = ("stats", "running", "waiting", "scheduled", "stalled", "depends", "recurring")


def queue_list(env: Env) -> HttpResponse:
    """Every queue with its counts."""
    context = {"queues": env.client.queues()}
    return env.render("queues.html", context, title="Queues", section="queues")


def queue_page(env: Env, name: str) -> HttpResponse:
    """One queue: counts, today's failures, settings, and the selected tab."""
    counts = queue_counts(env.client, name)
    tab = env.request.GET.get("tab", "stats")
    tab = tab if tab in TABS else "stats"
    day = stats_day(env.request.GET.get("date", ""), env.client.now())
    stats = queue_stats(env.client, name, day.timestamp())
    context = {
        "queue": counts,
        "tab": tab,
        "tabs": [(t, tab_count(counts, t)) for t in TABS],
        "stats": stats,
        "day": day,
        "settings": queue_settings(env, name),
        "tab_context": tab_context(env, counts, tab, stats),
        "queue_names": [q.name for q in env.client.queues()],
    }
    crumbs = [("Queues", env.url("queues")), (name, None)]
    return env.render("queue.html", context, title=f"Queue {name}", section="queues", crumbs=crumbs)


def stats_day(text: str, now: float) -> datetime.datetime:
    """Noon (UTC) of the `?date=YYYY-MM-DD` day, today when absent or malformed."""
    try:
        date = datetime.date.fromisoformat(text)
    except ValueError:
        date = datetime.datetime.fromtimestamp(now, tz=datetime.UTC).date()
    return datetime.datetime.combine(date, datetime.time(12), tzinfo=datetime.UTC)


def tab_count(counts: QueueCounts, tab: str) -> int | None:
    """How many jobs a tab lists (None for the stats tab)."""
    return None if tab == "stats" else int(getattr(counts, tab))


def tab_context(env: Env, counts: QueueCounts, tab: str, stats: Stats) -> dict[str, object]:
    """What the selected tab shows: charts, or one page of its jobs."""
    if tab == "stats":
        return {"wait": presenters.chart(stats.wait.histogram),
                "run": presenters.chart(stats.run.histogram)}
    total = tab_count(counts, tab) or 0
    page = paginate(
        env.request, lambda o, c: queue_jids(env.client, counts.name, tab, o, c), total
    )
    if tab == "recurring":
        return {"page": page.map(lambda jids: recurring_rows(env, jids))}
    now = env.client.now()
    return {"page": page.map(lambda jids: presenters.job_rows(get_jobs(env.client, jids), now))}


def recurring_rows(env: Env, jids: Sequence[str]) -> list[presenters.RecurringRow]:
    """Recurring templates by jid (skipping any deleted meanwhile)."""
    found = (get_recurring(env.client, jid) for jid in jids)
    return [presenters.recurring_row(job) for job in found if job is not None]


def queue_settings(env: Env, name: str) -> dict[str, str | None]:
    """The queue's own lease length and concurrency limit, and the global lease length."""
    values = config_values(env.client)
    return {
        "heartbeat": values.get(f"{name}-heartbeat"),
        "default_heartbeat": values.get("heartbeat"),
        "max_concurrency": values.get(f"{name}-max-concurrency"),
    }


def pause(env: Env) -> HttpResponse:
    """Stop handing out the queue's jobs."""
    return set_paused(env, paused=True)


def unpause(env: Env) -> HttpResponse:
    """Resume handing out the queue's jobs."""
    return set_paused(env, paused=False)


def set_paused(env: Env, *, paused: bool) -> HttpResponse:
    """Pause or unpause one queue, log it, and go back."""
    form = QueueForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("queues"))
    name = form.cleaned_data["queue"]
    queue = env.client.queue(name)
    verb = "Paused" if paused else "Unpaused"
    if paused:
        queue.pause()
    else:
        queue.unpause()
    audit.record(env, models.Queue, [(name, f"{verb} queue {name}")])
    messages.success(env.request, f"{verb} queue {name}.")
    return env.redirect_back(env.url("queue", name=name))


def save_settings(env: Env) -> HttpResponse:
    """Store a queue's heartbeat and max-concurrency (blank: back to the default)."""
    form = QueueSettingsForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("queues"))
    name = form.cleaned_data["queue"]
    heartbeat = form.cleaned_data["heartbeat"]
    limit = form.cleaned_data["max_concurrency"] or None
    queue = env.client.queue(name)
    queue.heartbeat = heartbeat
    queue.max_concurrency = limit
    shown = (
        f"heartbeat {'default' if heartbeat is None else f'{heartbeat:g} s'}, "
        f"max concurrency {'unlimited' if limit is None else limit}"
    )
    audit.record(env, models.Queue, [(name, f"Set queue {name}: {shown}")])
    messages.success(env.request, f"Queue {name}: {shown}.")
    return env.redirect_back(env.url("queue", name=name))
