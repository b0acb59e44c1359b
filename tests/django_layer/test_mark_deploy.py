"""Deploy markers from `manage.py qless_mark_deploy` and `django_qless.mark_deploy`."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

import django_qless
from django_qless.core import InvalidArgumentError, keys
from django_qless.core.deploys import Deploy, deploys_between
from django_qless.exceptions import QlessConfigurationError


def test_the_command_records_a_marker_now(redis_client: redis.Redis) -> None:
    out = io.StringIO()
    before = time.time()
    call_command("qless_mark_deploy", "release 4.2 (abc123)", stdout=out)
    [deploy] = deploys_between(redis_client, 0, time.time() + 1)
    assert deploy.label == "release 4.2 (abc123)" and before - 1 <= deploy.at <= time.time() + 1
    assert "Deploy 'release 4.2 (abc123)' marked at" in out.getvalue()


@pytest.mark.parametrize("label", ["", "  ", "two\nlines", "x" * 201])
def test_the_command_refuses_a_bad_label_and_writes_nothing(
    redis_client: redis.Redis, label: str
) -> None:
    with pytest.raises(CommandError, match="A deploy label is one line"):
        call_command("qless_mark_deploy", label)
    assert redis_client.exists(keys.DEPLOYS) == 0


def test_the_command_refuses_an_unknown_connection(redis_client: redis.Redis) -> None:
    with pytest.raises(CommandError, match="no connection 'nope'"):
        call_command("qless_mark_deploy", "v1", "--connection", "nope")
    assert redis_client.exists(keys.DEPLOYS) == 0


def test_the_command_marks_the_connection_asked_for(
    settings: Any, qless_url: str, redis_client: redis.Redis, db1: redis.Redis
) -> None:
    settings.QLESS = {"CONNECTIONS": {"default": {"URL": qless_url},
                                      "other": {"URL": qless_url.rsplit("/", 1)[0] + "/1"}}}
    call_command("qless_mark_deploy", "v9", "--connection", "other", stdout=io.StringIO())
    assert [d.label for d in deploys_between(db1, 0, time.time() + 1)] == ["v9"]
    assert redis_client.exists(keys.DEPLOYS) == 0


def test_the_python_call(redis_client: redis.Redis) -> None:
    deploy = django_qless.mark_deploy("v2")
    assert isinstance(deploy, Deploy)
    assert deploys_between(redis_client, 0, time.time() + 1) == [deploy]
    with pytest.raises(InvalidArgumentError):
        django_qless.mark_deploy("")
    with pytest.raises(QlessConfigurationError):
        django_qless.mark_deploy("v3", using="nope")
    assert len(deploys_between(redis_client, 0, time.time() + 1)) == 1
