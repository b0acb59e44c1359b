"""The system checks that read Redis: never an error when Redis is away or not needed."""

from __future__ import annotations

import socket
import time
from io import StringIO
from typing import Any

import pytest
from django.core.checks import Error, run_checks
from django.core.management import call_command

from django_qless import checks, conf
from django_qless.checks import check_lease_settings, check_redis_persistence
from tests.redis_harness import free_port


def test_an_unreachable_redis_is_a_warning_and_check_still_passes(settings: Any) -> None:
    settings.QLESS = {"URL": f"redis://127.0.0.1:{free_port()}/0"}
    messages = run_checks(include_deployment_checks=True, tags=["django_qless"])
    assert [m.id for m in messages] == ["django_qless.W003", "django_qless.W003"]
    assert not any(isinstance(m, Error) for m in messages)
    out, err = StringIO(), StringIO()
    call_command("check", stdout=out, stderr=err)  # would raise on an error
    text = out.getvalue() + err.getvalue()
    assert "cannot read the qless configuration of QLESS connection 'default'" in text


def test_immediate_mode_reads_no_redis(settings: Any) -> None:
    settings.QLESS = {"URL": f"redis://127.0.0.1:{free_port()}/0", "IMMEDIATE": True}
    assert check_lease_settings() == []
    assert check_redis_persistence() == []


def test_a_healthy_lease_config_passes(qless_url: str) -> None:
    assert check_lease_settings() == []


def test_require_durable_redis_must_be_a_boolean(settings: Any) -> None:
    settings.QLESS = {"REQUIRE_DURABLE_REDIS": "yes"}
    [problem] = conf.problems()
    assert problem.id == "django_qless.E003"
    assert problem.key == "QLESS['REQUIRE_DURABLE_REDIS']"
    settings.QLESS = {"REQUIRE_DURABLE_REDIS": True}
    assert conf.get_settings().require_durable_redis is True


def test_a_redis_that_never_answers_is_a_warning_within_the_deadline(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that drops packets must not hang every management command."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the TCP connection, never answers a command
    try:
        settings.QLESS = {"URL": f"redis://127.0.0.1:{listener.getsockname()[1]}/0"}
        monkeypatch.setattr(checks, "CHECK_DEADLINE", 0.5)
        started = time.monotonic()
        messages = check_lease_settings()
        assert time.monotonic() - started < 2
        assert [message.id for message in messages] == ["django_qless.W003"]
        assert "no answer within" in messages[0].msg
    finally:
        listener.close()
