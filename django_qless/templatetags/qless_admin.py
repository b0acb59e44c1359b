"""Template helpers of the qless admin pages: links by name, action buttons, durations, times."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..admin import presenters
from ..admin.job_actions import JobAction, job_action
from ..admin.presenters import when
from ..admin.visible import visible
from ..core import Job

register = template.Library()

#: kind -> (url name, URL keyword) of the pages a value can link to.
LINKS = {
    "job": ("job", "jid"),
    "queue": ("queue", "name"),
    "worker": ("worker", "name"),
    "group": ("failure_group", "group"),
    "recurring": ("recurring", "jid"),
}


def qless_reverse(context: template.Context, route: str, /, **kwargs: str) -> str | None:
    """Reverse an app URL on the page's connection; None if the value cannot be in a URL."""
    site = context.get("qless_site", "admin")
    try:
        return reverse(
            f"{site}:django_qless_{route}", kwargs={"alias": context["qless_alias"], **kwargs}
        )
    except NoReverseMatch:
        return None


@register.simple_tag(takes_context=True)
def qless_url(context: template.Context, route: str, /, **kwargs: Any) -> str:
    """URL of an app page or action on the page's connection ("" if it cannot be built)."""
    return qless_reverse(context, route, **{k: str(v) for k, v in kwargs.items()}) or ""


@register.simple_tag(takes_context=True)
def qless_link(context: template.Context, kind: str, value: Any, label: Any = None) -> SafeString:
    """A link to the page of a job, queue, worker, failure group, recurring job or tag."""
    text = value if label is None else label
    if value in (None, ""):
        return format_html("{}", text or "—")
    if kind == "tag":
        base = qless_reverse(context, "tagged")
        url = f"{base}?{urlencode({'tag': str(value)})}" if base else None
    else:
        name, keyword = LINKS[kind]
        url = qless_reverse(context, name, **{keyword: str(value)})
    # Shown with its control characters visible; the URL keeps the value as it is.
    text = visible(str(text)) if text not in (None, "") else "—"
    if url is None:
        return format_html("{}", text)
    if kind in ("job", "recurring") and label is None:
        # Cut to fit by CSS (`qless-jid-link`); the title shows the whole jid on hover.
        return format_html('<a href="{}" class="qless-jid-link" title="{}">{}</a>', url, text,
                           text)
    return format_html('<a href="{}">{}</a>', url, text)


@register.filter
def qless_visible(value: Any) -> str:
    """A name as text, its control characters shown (`admin.visible`)."""
    return visible(str(value))


def holds(context: template.Context) -> Callable[[str], bool]:
    """Whether the page's user holds a permission (the template's own `perms`)."""
    perms = context.get("perms")
    return lambda perm: perms is not None and perm in perms


@register.simple_tag(takes_context=True)
def qless_job_page_actions(context: template.Context, job: Job) -> presenters.ActionBar:
    """The job page's action buttons for `job` and the page's user."""
    return presenters.job_page_actions(job, holds(context))


@register.simple_tag(takes_context=True)
def qless_list_actions(context: template.Context) -> list[presenters.ButtonGroup]:
    """The bulk bar above a job list, for the page's user."""
    return presenters.list_actions(holds(context))


@register.simple_tag(takes_context=True)
def qless_tag_actions(context: template.Context) -> list[JobAction]:
    """The actions on every job with a tag, for the page's user."""
    return presenters.tag_actions(holds(context))


@register.simple_tag(takes_context=True)
def qless_may(context: template.Context, name: str) -> bool:
    """Whether the page's user may run the job action with URL name `name`."""
    return holds(context)(job_action(name).perm)


@register.filter
def duration(seconds: Any) -> str:
    """Seconds as a short human duration ("350 ms", "42 s", "3 min 4 s", "2 h 5 min")."""
    try:
        value = abs(float(seconds))
    except (TypeError, ValueError):
        return ""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"
    units = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))
    parts: list[str] = []
    for size, unit in units:
        if value >= size and len(parts) < 2:
            count, value = divmod(value, size)
            parts.append(f"{count:.0f} {unit}")
    return " ".join(parts)


@register.filter
def latency_of(latencies: Any, queue: str) -> str:
    """The wait of a queue's next job from a `{queue: seconds}` map; "" when none waits."""
    if not isinstance(latencies, Mapping) or queue not in latencies:
        return ""
    return duration(latencies[queue])


@register.filter
def lease(seconds_left: Any) -> str:
    """A lease's time left: "expires in 42 s" or "expired 5 s ago"."""
    try:
        value = float(seconds_left)
    except (TypeError, ValueError):
        return ""
    if value >= 0:
        return f"expires in {duration(value)}"
    return f"expired {duration(value)} ago"


@register.filter
def epoch(seconds: Any) -> datetime | None:
    """An epoch timestamp as a datetime, for the `date` filter."""
    try:
        return when(float(seconds))
    except (TypeError, ValueError):
        return None
