"""What kind of job a job is (Tasks task or @qless_job) and the return value its data holds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..registry import registry
from ..results import RESULT_KEY
from . import masking

#: Data key of a Tasks task's marker object (`django_qless.tasks.payload.TASK_KEY`; the admin
#: does not import the Tasks package, which needs Django 6 or the django-tasks backport).
TASK_KEY = "task"


@dataclass(frozen=True)
class JobKind:
    """Which API enqueued a job: "task" (Django Tasks), "qless_job", or "other"."""

    api: str
    #: The `TASKS` alias of a Tasks task's backend ("" for the other kinds).
    backend: str = ""

    @property
    def label(self) -> str:
        """The kind as the job page names it."""
        if self.api == "task":
            return f"Django task (backend {self.backend!r})" if self.backend else "Django task"
        if self.api == "qless_job":
            return "@qless_job function"
        return "not a registered job (written by another client, or its code is gone)"


def decoded(raw: str) -> Mapping[str, Any] | None:
    """Job data as a JSON object, or None when it is not one."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, Mapping) else None


def job_kind(klass: str, data: Mapping[str, Any] | None) -> JobKind:
    """The kind of a job from its klass and decoded data."""
    marker = None if data is None else data.get(TASK_KEY)
    if isinstance(marker, Mapping):
        return JobKind("task", str(marker.get("backend") or ""))
    if klass in registry:
        return JobKind("qless_job")
    return JobKind("other")


def has_result(data: Mapping[str, Any] | None) -> bool:
    """Whether decoded job data holds a stored return value (None is one)."""
    return data is not None and RESULT_KEY in data


def pretty_result(data: Mapping[str, Any] | None) -> str | None:
    """The stored return value as indented JSON, secrets masked; None when there is none."""
    if data is None or not has_result(data):
        return None
    return json.dumps(masking.masker().data(data[RESULT_KEY]), indent=2, ensure_ascii=False)
