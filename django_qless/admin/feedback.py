"""Reporting the outcome of actions (messages framework) and confirmation pages."""

from __future__ import annotations

import re
from collections.abc import Sequence

from django import forms
from django.contrib import messages
from django.http import HttpResponse

from ..core import DependencyError, JobNotFoundError, QlessError, ScriptError
from .page_context import PageContext

#: Errors listed one by one in a message; the rest are counted.
ERRORS_SHOWN = 10


def form_errors(form: forms.Form) -> str:
    """A form's errors as one line of text."""
    parts = []
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + " ".join(str(e) for e in errors))
    return "; ".join(parts)


def invalid(ctx: PageContext, form: forms.Form, fallback: str) -> HttpResponse:
    """Report a form's errors and go back."""
    messages.error(ctx.request, f"Nothing was changed: {form_errors(form)}")
    return ctx.redirect_back(fallback)


def report(ctx: PageContext, done: str | None, errors: Sequence[tuple[str, str]]) -> None:
    """A success message (if anything was done) and one error message listing failures."""
    if done:
        messages.success(ctx.request, done)
    if errors:
        shown = "; ".join(f"{name}: {error}" for name, error in errors[:ERRORS_SHOWN])
        more = len(errors) - ERRORS_SHOWN
        suffix = f" (and {more} more)" if more > 0 else ""
        messages.error(ctx.request, f"{len(errors)} not done: {shown}{suffix}")


def problem_text(exc: QlessError) -> str:
    """What a refusal means, in words for the page (never the script's raw error)."""
    if isinstance(exc, DependencyError):
        return "other jobs depend on it: cancel them together with it"
    if isinstance(exc, JobNotFoundError):
        return "no longer exists"
    if isinstance(exc, ScriptError):
        # "Cancel(): Job x is not running" -> "Job x is not running"
        return re.sub(r"^\w+(\.\w+)?\(\):\s*", "", exc.message)
    return str(exc)


def plural(count: int, noun: str) -> str:
    """`1 job`, `3 jobs`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def confirmed(ctx: PageContext) -> bool:
    """Whether the POST comes from the confirmation page."""
    return ctx.request.POST.get("confirmed") == "yes"


def confirm_page(
    ctx: PageContext, *, title: str, question: str, items: Sequence[str] = (),
    also: Sequence[str] = (), fallback: str,
) -> HttpResponse:
    """Ask before a destructive action: re-posts the same fields with `confirmed=yes`,
    and the jids in `also` (jobs that must go with the selected ones) as more `jids`."""
    fields = [
        (name, value)
        for name, values in ctx.request.POST.lists()
        if name not in ("csrfmiddlewaretoken", "confirmed")
        for value in values
    ]
    back = ctx.request.POST.get("next") or fallback
    context = {
        "question": question,
        "items": items[:50],
        "more_items": max(0, len(items) - 50),
        "also": also[:50],
        "more_also": max(0, len(also) - 50),
        "also_fields": [("jids", jid) for jid in also],
        "total": len(items) + len(also),
        "fields": fields,
        "action_url": ctx.request.path,
        "back_url": back if ctx.redirect_target_safe(back) else fallback,
    }
    return ctx.render("confirm.html", context, title=title, section="")
