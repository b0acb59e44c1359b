"""The qless config: every key with its value, and setting or unsetting keys."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core.config import NUMERIC_KEYS
from ...core.server_info import read_server_info
from .. import audit
from ..config_help import config_rows
from ..feedback import form_errors
from ..forms import ConfigForm, ConfigKeyForm
from ..page_context import PageContext

#: Keys offered in the form even before they are set.
KNOWN_KEYS = ("application", *NUMERIC_KEYS)


def config_page(
    ctx: PageContext, form: ConfigForm | None = None, status: int = 200
) -> HttpResponse:
    """Every config value (defaults included), a form to set one, and the Redis server."""
    context = {
        "rows": config_rows(ctx.client.config.as_text(), ctx.client.config.overridden()),
        "form": form or ConfigForm(),
        "known_keys": KNOWN_KEYS,
        "redis_info": read_server_info(ctx.client),
    }
    return ctx.render("config.html", context, title="Config", section="config", status=status)


def set_value(ctx: PageContext) -> HttpResponse:
    """Store a config value (numeric keys are checked); errors re-show the form."""
    form = ConfigForm(ctx.request.POST)
    if not form.is_valid():
        messages.error(ctx.request, f"Nothing was changed: {form_errors(form)}")
        return config_page(ctx, form)
    key, value = form.cleaned_data["key"], form.cleaned_data["value"]
    before = ctx.client.config.as_text().get(key)
    ctx.client.config.set(key, value)
    audit.record(ctx, [audit.Change(
        "config_set", Kind.CONFIG, key, f"Set config {key} to {value!r}",
        before={key: before}, after={key: value},
    )])
    messages.success(ctx.request, f"Set {key} to {value}.")
    return ctx.redirect_back(ctx.url("config"))


def unset_value(ctx: PageContext) -> HttpResponse:
    """Remove a stored config value, so its default applies again."""
    form = ConfigKeyForm(ctx.request.POST)
    if not form.is_valid():
        messages.error(ctx.request, f"Nothing was changed: {form_errors(form)}")
        return ctx.redirect_back(ctx.url("config"))
    key = form.cleaned_data["key"]
    if key not in ctx.client.config.overridden():
        messages.error(ctx.request, f"{key} is not set: it already has its default value.")
        return ctx.redirect_back(ctx.url("config"))
    before = ctx.client.config.as_text().get(key)
    ctx.client.config.unset(key)
    audit.record(ctx, [audit.Change(
        "config_unset", Kind.CONFIG, key, f"Unset config {key}",
        before={key: before}, after={key: ctx.client.config.as_text().get(key)},
    )])
    messages.success(ctx.request, f"Unset {key} (its default applies).")
    return ctx.redirect_back(ctx.url("config"))
