"""Setting a queue's latency threshold: how long its next job may wait before the overview
lists the queue under "What is stuck" (`core.latency_thresholds`)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import latency_thresholds
from ...templatetags.qless_admin import duration
from ..audit import Change, record
from ..feedback import invalid
from ..forms import QueueForm
from ..page_context import PageContext


class LatencyThresholdForm(QueueForm):
    """A queue's latency threshold in seconds (blank: the default; 0: never flagged)."""

    threshold = forms.FloatField(
        required=False, min_value=0, max_value=365 * 86400,
        help_text="Seconds the queue's next job may wait (blank: the default, 0: never).",
    )


def save_threshold(ctx: PageContext) -> HttpResponse:
    """Store (or clear) a queue's latency threshold, audited, and go back."""
    form = LatencyThresholdForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("queues"))
    name = form.cleaned_data["queue"]
    seconds = form.cleaned_data["threshold"]
    before = latency_thresholds.read(ctx.client, name)
    latency_thresholds.write(ctx.client, name, seconds)
    shown = describe(seconds)
    record(ctx, [Change(
        "latency_threshold", Kind.QUEUE, name, f"Set latency threshold of queue {name}: {shown}",
        before={"latency threshold": before}, after={"latency threshold": seconds},
    )])
    messages.success(ctx.request, f"Queue {name}: latency threshold {shown}.")
    return ctx.redirect_back(ctx.url("queue", name=name))


def describe(seconds: float | None) -> str:
    """A threshold in words."""
    if seconds is None:
        return "the default"
    return "off (never flagged)" if seconds == 0 else duration(seconds)
