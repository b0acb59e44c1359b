"""The qless config: every key with its value, and setting or unsetting keys."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse

from ... import models
from ...core.config import NUMERIC_KEYS
from .. import audit
from ..env import Env
from ..feedback import form_errors
from ..forms import ConfigForm, ConfigKeyForm
from ..queries import config_values

#: Keys offered in the form even before they are set.
KNOWN_KEYS = ("application", *NUMERIC_KEYS)


def config_page(env: Env, form: ConfigForm | None = None, status: int = 200) -> HttpResponse:
    """Every config value (defaults included) and a form to set one."""
    context = {
        "values": config_values(env.client),
        "form": form or ConfigForm(),
        "known_keys": KNOWN_KEYS,
    }
    return env.render("config.html", context, title="Config", section="config", status=status)


def set_value(env: Env) -> HttpResponse:
    """Store a config value (numeric keys are checked); errors re-show the form."""
    form = ConfigForm(env.request.POST)
    if not form.is_valid():
        messages.error(env.request, f"Nothing was changed: {form_errors(form)}")
        return config_page(env, form)
    key, value = form.cleaned_data["key"], form.cleaned_data["value"]
    env.client.config.set(key, value)
    audit.record(env, models.Config, [(key, f"Set config {key} to {value!r}")])
    messages.success(env.request, f"Set {key} to {value}.")
    return env.redirect_back(env.url("config"))


def unset_value(env: Env) -> HttpResponse:
    """Remove a stored config value, so its default applies again."""
    form = ConfigKeyForm(env.request.POST)
    if not form.is_valid():
        messages.error(env.request, f"Nothing was changed: {form_errors(form)}")
        return env.redirect_back(env.url("config"))
    key = form.cleaned_data["key"]
    env.client.config.unset(key)
    audit.record(env, models.Config, [(key, f"Unset config {key}")])
    messages.success(env.request, f"Unset {key} (its default applies).")
    return env.redirect_back(env.url("config"))
