"""Functions: figures per job function (klass) over the last hour, day or week, and one
function's charts (Sidekiq's Metrics tab)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse

from ...core import fn_metrics
from ...core.deploys import deploys_between
from .. import fn_pages
from ..page_context import PageContext


def chosen_range(ctx: PageContext) -> str:
    """The range asked for (`?range=1h|24h|7d`), the last hour by default."""
    asked = ctx.request.GET.get("range", "1h")
    return asked if asked in fn_metrics.RANGES else "1h"


def range_links(ctx: PageContext, route: str, **kwargs: str) -> list[tuple[str, str, bool]]:
    """(label, url, current) of each range, keeping the other query parameters."""
    current = chosen_range(ctx)
    links = []
    for name in fn_metrics.RANGES:
        query = ctx.request.GET.copy()
        query["range"] = name
        links.append((name, f"{ctx.url(route, **kwargs)}?{query.urlencode()}", name == current))
    return links


def function_list(ctx: PageContext) -> HttpResponse:
    """Every job function that ran in the range: executions, failures, times, percentiles."""
    range_name = chosen_range(ctx)
    sort = ctx.request.GET.get("sort", "total")
    if sort not in fn_pages.SORTS:
        sort = "total"
    window = fn_metrics.read_list(ctx.client.redis, range_name, ctx.client.now())
    totals = window.totals()
    rows = fn_pages.rows(totals, sort)
    sort_links = []
    for name, (_, heading) in fn_pages.SORTS.items():
        query = ctx.request.GET.copy()
        query["sort"] = name
        sort_links.append((heading, f"?{query.urlencode()}", name == sort))
    context = {
        "rows": rows,
        "range_name": range_name,
        "range_label": fn_pages.RANGE_LABELS[range_name][0],
        "since": fn_pages.clock(window.start),
        "ranges": range_links(ctx, "functions"),
        "sort": sort,
        "sort_links": sort_links,
        "top_total": [fn_pages.Row(f) for f in window.top("run_ms", fn_pages.TOP)],
        "top_failures": [fn_pages.Row(f) for f in window.top("failures", fn_pages.TOP)],
    }
    return ctx.render("functions.html", context, title="Job functions", section="functions")


def function_page(ctx: PageContext, klass: str) -> HttpResponse:
    """One job function over the range: executions, run and wait percentiles, histograms,
    deploys (a klass that ran nothing there gets the page, saying so)."""
    range_name = chosen_range(ctx)
    window = fn_metrics.read_function(ctx.client.redis, range_name, klass, ctx.client.now())
    page = fn_pages.build_function(window, klass, range_name,
                                   deploys_between(ctx.client.redis, window.start, window.end))
    context = {
        "klass": klass,
        "fn": page,
        "row": fn_pages.Row(page.total),
        "range_name": range_name,
        "range_label": fn_pages.RANGE_LABELS[range_name][0],
        "ranges": range_links(ctx, "function", klass=klass),
        "jobs_url": f"{ctx.url('search')}?{urlencode({'klass': klass})}",
        "wait_p50": fn_pages.milliseconds(page.total.wait_percentile(0.5)),
        "wait_p95": fn_pages.milliseconds(page.total.wait_percentile(0.95)),
        "wait_p99": fn_pages.milliseconds(page.total.wait_percentile(0.99)),
    }
    crumbs = [("Job functions", ctx.url("functions")), (klass, None)]
    return ctx.render("function.html", context, title=f"Job function {klass}",
                      section="functions", crumbs=crumbs)
