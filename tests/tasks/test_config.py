"""OPTIONS and QUEUES are validated with errors naming the key; the system check."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_qless.tasks import QlessBackend
from django_qless.tasks.compat import InvalidTask, Task
from django_qless.tasks.options import DEFAULT_RESULT_MAX_BYTES, BackendOptions

BACKEND = "django_qless.tasks.QlessBackend"


def backend(**params: Any) -> QlessBackend:
    """A backend built the way Django builds it from TASKS."""
    return QlessBackend("qless", {"BACKEND": BACKEND, **params})


def test_defaults() -> None:
    built = backend()
    assert built.qless_options == BackendOptions()
    assert built.queues == {"default"}
    assert (built.heartbeat, built.time_limit) == (None, None)
    assert built.result_max_bytes == DEFAULT_RESULT_MAX_BYTES


def test_every_option_is_read() -> None:
    built = backend(OPTIONS={
        "CONNECTION": "other", "RETRIES": 0, "TAGS": ["a"], "HEARTBEAT": 5,
        "TIME_LIMIT": 30, "RESULT_MAX_BYTES": 10, "ENQUEUE_ON_COMMIT": False,
    })
    assert built.qless_options == BackendOptions(
        connection="other", retries=0, tags=("a",), heartbeat=5.0, time_limit=30.0,
        result_max_bytes=10, enqueue_on_commit=False,
    )
    assert built.connection_for("default") == "other"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"RETRIES": -1}, "'RETRIES'"),
        ({"RETRIES": "3"}, "'RETRIES'"),
        ({"TAGS": "a"}, "'TAGS'"),
        ({"TAGS": None}, "'TAGS'"),
        ({"HEARTBEAT": 0}, "'HEARTBEAT'"),
        ({"TIME_LIMIT": True}, "'TIME_LIMIT'"),
        ({"RESULT_MAX_BYTES": 0}, "'RESULT_MAX_BYTES'"),
        ({"ENQUEUE_ON_COMMIT": "yes"}, "'ENQUEUE_ON_COMMIT'"),
        ({"CONNECTION": 3}, "'CONNECTION'"),
        ({"TYPO": 1}, "TYPO"),
    ],
)
def test_a_bad_option_names_its_key(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=named):
        backend(OPTIONS=options)


def test_options_must_be_a_dict() -> None:
    with pytest.raises(ImproperlyConfigured, match="OPTIONS"):
        backend(OPTIONS=["RETRIES"])


def test_queue_names_must_be_qless_queue_names() -> None:
    with pytest.raises(ImproperlyConfigured, match="QUEUES"):
        backend(QUEUES=["default", "bad queue"])


class Holder:
    """A module-level class: its methods pass Django's own `<locals>` test."""

    @staticmethod
    def method() -> None:
        """Its module path cannot be imported back, so it cannot be a task."""


def test_a_method_is_not_a_module_level_function(tasks: Any) -> None:
    with pytest.raises(InvalidTask, match="module level"):
        Task(func=Holder.method)


def test_with_no_queues_any_qless_queue_name_is_accepted(tasks: Any) -> None:
    assert tasks.add.using(backend="open", queue_name="anything").queue_name == "anything"
    with pytest.raises(InvalidTask, match="queue name"):
        tasks.add.using(backend="open", queue_name="has space")


def test_check_reports_an_unknown_connection(qless_settings: dict[str, Any]) -> None:
    assert list(backend().check()) == []
    [error] = backend(OPTIONS={"CONNECTION": "nope"}).check()
    assert error.id == "django_qless.E030" and "'nope'" in error.msg


def test_check_leaves_a_broken_qless_setting_to_django_qless_s_own_checks(settings: Any) -> None:
    settings.QLESS = {"CONNECTIONS": "not a dict"}
    assert list(backend(OPTIONS={"CONNECTION": "nope"}).check()) == []
