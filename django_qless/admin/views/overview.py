"""The overview: what is stuck, the last hour's throughput and depths, queues, failure
groups, workers and tracked jobs at a glance."""

from __future__ import annotations

from django.http import HttpResponse

from ...core.deploys import deploys_between
from ...core.fn_metrics import read_durations
from ...core.latency import latencies
from ...core.live import SPANS, read_history
from .. import live_overview, stuck
from ..page_context import PageContext
from ..presenters import tracked_counts

#: Failure groups and workers listed on the overview (their own pages list all).
SHOWN = 20


def overview(ctx: PageContext) -> HttpResponse:
    """The overview page of one connection (`?queue=` narrows the charts to one queue,
    `?range=1h|24h|7d` picks their time range, the hour when absent or unknown)."""
    client = ctx.client
    queues = client.queues()
    span = ctx.request.GET.get("range", "1h")
    span = span if span in SPANS else "1h"
    now = client.now()
    # The counts just read become this minute's depth sample unless a worker took one.
    history = read_history(client, now, offer=queues, span=span)
    chosen = ctx.request.GET.get("queue")
    known = {queue.name for queue in queues} | set(history.queues())
    queue = chosen if chosen in known else None
    deploys = deploys_between(client.redis, history.minutes[0].start, now)
    runs, waits = read_durations(client.redis, span, now, queue)
    # Percentiles where qless_worker processes recorded histograms; else the average.
    live = live_overview.build(history, queues, queue, deploys,
                               runs if any(runs) else None, waits if any(waits) else None)
    groups = sorted(client.failed().items(), key=lambda item: (-item[1], item[0]))
    workers = client.workers.counts()
    waited = latencies(client, [queue.name for queue in queues])
    context = {
        "live": live,
        "stuck": stuck.build(client, queues, workers, waited),
        "queues": queues,
        "latencies": waited,
        "groups": groups[:SHOWN],
        "groups_total": len(groups),
        "failed_total": sum(count for _, count in groups),
        "workers": workers[:SHOWN],
        "workers_total": len(workers),
        "tracked": tracked_counts(client.tracked_states()),
        "application": client.config.as_text().get("application", "qless"),
    }
    return ctx.render("overview.html", context, title="Qless overview", section="overview")
