"""The overview: queues, failure groups, workers and tracked jobs at a glance."""

from __future__ import annotations

from django.http import HttpResponse

from ..page_context import PageContext
from ..presenters import tracked_counts

#: Failure groups and workers listed on the overview (their own pages list all).
SHOWN = 20


def overview(ctx: PageContext) -> HttpResponse:
    """The overview page of one connection."""
    client = ctx.client
    groups = sorted(client.failed().items(), key=lambda item: (-item[1], item[0]))
    workers = client.workers.counts()
    context = {
        "queues": client.queues(),
        "groups": groups[:SHOWN],
        "groups_total": len(groups),
        "failed_total": sum(count for _, count in groups),
        "workers": workers[:SHOWN],
        "workers_total": len(workers),
        "tracked": tracked_counts(client.tracked_states()),
        "application": client.config.as_text().get("application", "qless"),
    }
    return ctx.render("overview.html", context, title="Qless overview", section="overview")
