"""Forms of the admin actions; values are checked with the core's own validation rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from ..core import InvalidArgumentError, control
from ..core import validation as check
from ..core.config import coerce

#: Most jids one request may name (the largest page a list shows is far below this).
MAX_SELECTION = 1000


def checked(rule: Callable[[Any], Any], value: Any) -> Any:
    """Run a core validation rule, turning its error into a form error."""
    try:
        return rule(value)
    except InvalidArgumentError as exc:
        raise ValidationError(str(exc)) from exc


class JidListField(forms.Field):
    """Several jids posted under one name (checkboxes or hidden inputs)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        """The posted jids, each checked, duplicates dropped."""
        values = [v for v in (value or []) if v]
        if not values and self.required:
            raise ValidationError("Select at least one job.")
        if len(values) > MAX_SELECTION:
            raise ValidationError(f"Select at most {MAX_SELECTION} jobs at a time.")
        return list(dict.fromkeys(checked(check.jid, v) for v in values))


def split_tags(text: str) -> list[str]:
    """Comma-separated tags, blanks dropped."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


class JidsForm(forms.Form):
    """Actions on a selection of jobs."""

    jids = JidListField()


class MoveForm(JidsForm):
    """Move jobs to another queue."""

    queue = forms.CharField(max_length=128)

    def clean_queue(self) -> str:
        """A valid queue name."""
        return str(checked(check.queue_name, self.cleaned_data["queue"].strip()))


class PriorityForm(JidsForm):
    """Change jobs' priority (higher pops first)."""

    priority = forms.FloatField()


class TagsForm(JidsForm):
    """Add or remove tags."""

    tags = forms.CharField(max_length=2000, help_text="Comma-separated.")

    def clean_tags(self) -> list[str]:
        """One or more valid tags."""
        tags = split_tags(self.cleaned_data["tags"])
        if not tags:
            raise ValidationError("Give at least one tag.")
        return [str(checked(lambda t: check.label(t, "tag"), tag)) for tag in tags]


class UndependForm(forms.Form):
    """Stop a job (in state depends) waiting for one of its dependencies."""

    jid = forms.CharField(max_length=1024)
    dependency = forms.CharField(max_length=1024)

    def clean_jid(self) -> str:
        """An existing-jid shape."""
        return str(checked(check.jid, self.cleaned_data["jid"]))

    def clean_dependency(self) -> str:
        """An existing-jid shape."""
        return str(checked(check.jid, self.cleaned_data["dependency"]))


class QueueForm(forms.Form):
    """Actions on one queue."""

    queue = forms.CharField(max_length=128)

    def clean_queue(self) -> str:
        """A valid queue name."""
        return str(checked(check.queue_name, self.cleaned_data["queue"]))


class QueueSettingsForm(QueueForm):
    """A queue's lease length and concurrency limit (blank: use the default / no limit)."""

    heartbeat = forms.FloatField(
        required=False, min_value=1, help_text="Seconds a worker holds a job between heartbeats."
    )
    max_concurrency = forms.IntegerField(
        required=False, min_value=0, help_text="Jobs that may run at once (blank or 0: no limit)."
    )


class GroupForm(forms.Form):
    """Bulk actions on a failure group."""

    group = forms.CharField(max_length=256)

    def clean_group(self) -> str:
        """A valid group name."""
        return str(checked(lambda g: check.label(g, "failure group"), self.cleaned_data["group"]))


class TagForm(forms.Form):
    """Bulk actions on every job with a tag."""

    tag = forms.CharField(max_length=256)

    def clean_tag(self) -> str:
        """A valid tag."""
        return str(checked(lambda t: check.label(t, "tag"), self.cleaned_data["tag"]))


class WorkerForm(forms.Form):
    """Forget a worker."""

    name = forms.CharField(max_length=256)

    def clean_name(self) -> str:
        """A valid worker name."""
        return str(checked(check.worker_name, self.cleaned_data["name"]))


class WorkerControlForm(WorkerForm):
    """Pause, resume or stop a worker."""

    action = forms.ChoiceField(choices=[(a, a) for a in control.ACTIONS])


class RecurringForm(forms.Form):
    """Edit a recurring job template."""

    jid = forms.CharField(max_length=1024, widget=forms.HiddenInput)
    queue = forms.CharField(max_length=128, help_text="Queue the spawned jobs go to.")
    interval = forms.FloatField(min_value=0.001, help_text="Seconds between two spawns.")
    priority = forms.FloatField()
    retries = forms.IntegerField(min_value=0)
    backlog = forms.IntegerField(
        min_value=0, help_text="Most missed runs to catch up on at once (0: all)."
    )
    tags = forms.CharField(max_length=2000, required=False, help_text="Comma-separated.")
    data_json = forms.CharField(
        label="Data", required=False, widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="A JSON object. Leave blank to keep the current data.",
    )

    def clean_jid(self) -> str:
        """An existing-jid shape."""
        return str(checked(check.jid, self.cleaned_data["jid"]))

    def clean_queue(self) -> str:
        """A valid queue name."""
        return str(checked(check.queue_name, self.cleaned_data["queue"].strip()))

    def clean_tags(self) -> list[str]:
        """Valid tags (possibly none)."""
        tags = split_tags(self.cleaned_data["tags"])
        return [str(checked(lambda t: check.label(t, "tag"), tag)) for tag in tags]

    def clean_data_json(self) -> dict[str, Any] | None:
        """A JSON object, or None to keep the current data."""
        text = self.cleaned_data["data_json"].strip()
        if not text:
            return None
        try:
            value = check.decode_object(text)
        except InvalidArgumentError as exc:
            raise ValidationError(str(exc)) from exc
        checked(lambda v: check.encode_data(v, 1_048_576), value)
        return value


class ConfigForm(forms.Form):
    """Set one config key."""

    key = forms.CharField(max_length=256)
    value = forms.CharField(max_length=10_000)

    def clean_key(self) -> str:
        """A valid key."""
        return str(checked(lambda k: check.label(k, "config key"), self.cleaned_data["key"]))

    def clean(self) -> dict[str, Any]:
        """Numeric keys (heartbeat, grace-period, ...) must hold sane numbers."""
        cleaned = super().clean() or {}
        if "key" in cleaned and "value" in cleaned:
            key = cleaned["key"]
            cleaned["value"] = checked(lambda v: coerce(key, v), cleaned["value"].strip())
        return cleaned


class ConfigKeyForm(forms.Form):
    """Unset one config key."""

    key = forms.CharField(max_length=256)

    def clean_key(self) -> str:
        """A valid key."""
        return str(checked(lambda k: check.label(k, "config key"), self.cleaned_data["key"]))


class JidForm(forms.Form):
    """Actions on one job or recurring job."""

    jid = forms.CharField(max_length=1024)

    def clean_jid(self) -> str:
        """An existing-jid shape."""
        return str(checked(check.jid, self.cleaned_data["jid"]))
