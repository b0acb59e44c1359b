"""The audit page: who did what to which job, queue or worker, when, before and after."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.db.models import QuerySet
from django.http import HttpResponse

from ...audit_log.models import TARGET_CHARS, AuditEntry, Kind
from ..audit import ACTIONS
from ..page_context import PageContext
from ..pagination import paginate

#: Kind -> (route, URL keyword) of the page an entry's target links to ("" : no keyword).
TARGET_PAGES: dict[str, tuple[str, str]] = {
    Kind.JOB: ("job", "jid"), Kind.QUEUE: ("queue", "name"), Kind.WORKER: ("worker", "name"),
    Kind.FAILURE_GROUP: ("failure_group", "group"), Kind.RECURRING: ("recurring", "jid"),
    Kind.CRON: ("recurring_list", ""), Kind.CONFIG: ("config", ""), Kind.TAG: ("tagged", ""),
}
PAGE_SIZE = 50
TIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]
#: The browser's own date and time picker; times are in Django's current time zone.
TIME_INPUT = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class AuditFilterForm(forms.Form):
    """The page's filters (every one optional)."""

    actor = forms.CharField(required=False, max_length=150, label="User")
    action = forms.ChoiceField(
        required=False, choices=[("", "any"), *sorted(ACTIONS.items(), key=lambda a: a[1])]
    )
    kind = forms.ChoiceField(required=False, choices=[("", "any"), *Kind.choices], label="On")
    target = forms.CharField(required=False, max_length=TARGET_CHARS, label="Jid or name")
    since = forms.DateTimeField(
        required=False, input_formats=TIME_FORMATS, label="From", widget=TIME_INPUT
    )
    until = forms.DateTimeField(
        required=False, input_formats=TIME_FORMATS, label="To", widget=TIME_INPUT
    )


@dataclass(frozen=True)
class Row:
    """One audit entry as shown: its target's link and its changed values as text."""

    entry: AuditEntry
    action: str
    link: str | None
    #: (field, before, after), each value as text.
    values: Sequence[tuple[str, str, str]]


def audit_page(ctx: PageContext) -> HttpResponse:
    """The connection's audit entries, newest first, filtered and paginated."""
    form = AuditFilterForm(ctx.request.GET)
    entries = filtered(ctx.alias, form.cleaned_data if form.is_valid() else {})
    page = paginate(
        ctx.request, lambda offset, count: list(entries[offset : offset + count]),
        entries.count(), size=PAGE_SIZE,
    ).map(lambda found: [row(ctx, entry) for entry in found])
    context = {"form": form, "page": page, "filtered": any(ctx.request.GET.get(name)
                                                         for name in form.fields)}
    return ctx.render("audit.html", context, title="Audit log", section="audit")


def filtered(alias: str, data: dict[str, Any]) -> QuerySet[AuditEntry]:
    """A connection's entries matching the filters, newest first (each served by an index)."""
    entries = AuditEntry.objects.filter(connection=alias)
    for name in ("actor", "action", "kind", "target"):
        if data.get(name):
            entries = entries.filter(**{name: data[name]})
    if data.get("since"):
        entries = entries.filter(time__gte=data["since"])
    if data.get("until"):
        entries = entries.filter(time__lte=data["until"])
    return entries.order_by("-time", "-id")


def row(ctx: PageContext, entry: AuditEntry) -> Row:
    """An entry with its target's link and its values side by side."""
    names = [*entry.before, *(name for name in entry.after if name not in entry.before)]
    values = [(name, shown(entry.before.get(name)), shown(entry.after.get(name)))
              for name in names]
    return Row(entry, ACTIONS.get(entry.action, entry.action), target_link(ctx, entry), values)


def target_link(ctx: PageContext, entry: AuditEntry) -> str | None:
    """The page of an entry's job, queue, worker, ... (None when it cannot have one)."""
    route, keyword = TARGET_PAGES.get(entry.kind, ("", ""))
    cut = len(entry.target) >= TARGET_CHARS and entry.target.endswith("…")
    if not route or cut:
        return None
    if entry.kind == Kind.FAILURE_GROUP and entry.target == "*":
        return ctx.link("failures")
    if entry.kind == Kind.TAG:
        base = ctx.link("tagged")
        return f"{base}?{urlencode({'tag': entry.target})}" if base else None
    return ctx.link(route, **({keyword: entry.target} if keyword else {}))


def shown(value: Any) -> str:
    """A recorded value as text."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
