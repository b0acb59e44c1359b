"""Cron schedules in the admin: "Run now" puts one job of a schedule at once."""

from __future__ import annotations

import secrets

from django import forms
from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core.crons import CronStore
from .. import audit
from ..feedback import confirm_page, confirmed, invalid
from ..page_context import PageContext


class CronNameForm(forms.Form):
    """The schedule an action is about."""

    name = forms.CharField(max_length=256)


def run_now(ctx: PageContext) -> HttpResponse:
    """Put one job of a cron schedule now (after a confirmation), under a jid of its own;
    its slots are untouched, and the due ones are put while at it."""
    form = CronNameForm(ctx.request.POST)
    back = ctx.url("recurring_list")
    if not form.is_valid():
        return invalid(ctx, form, back)
    name = form.cleaned_data["name"]
    store = CronStore(ctx.client)
    found = store.read([name])
    if not found:
        messages.error(ctx.request, f"No cron schedule {name!r}.")
        return ctx.redirect_back(back)
    definition = found[0].definition
    if not confirmed(ctx):
        return confirm_page(
            ctx, title="Run a cron schedule now", fallback=back,
            question=f"Put one {definition.klass} job of cron schedule {name} "
            f"({definition.expression} {definition.tz}) in queue {definition.queue} now? "
            "Its scheduled runs stay as they are.",
        )
    outcome = store.put_now(definition, secrets.token_hex(8))
    store.create_slots(name)
    audit.record(ctx, [audit.Change(
        "cron_run", Kind.CRON, name,
        f"Ran cron schedule {name} now: job {outcome.jid} in queue {definition.queue}",
        after={"job": outcome.jid, "queue": definition.queue},
    )])
    messages.success(ctx.request, f"Put job {outcome.jid} of cron schedule {name}.")
    return ctx.redirect_back(back)
