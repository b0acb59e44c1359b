"""Bulk actions: a whole failure group or tag, in batches, on up to 10,000 jobs."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from django.contrib.admin.models import LogEntry
from django.test import Client as HttpClient

from django_qless.admin import bulk
from django_qless.admin.views import failures
from django_qless.core import Client, ScriptError
from tests.admin.conftest import KLASS, messages_of, post, url
from tests.conftest import LuaScript


def plant_failed(
    lua: LuaScript, redis_client: redis.Redis, count: int, *, group: str, queue: str,
    prefix: str = "j", tags: tuple[str, ...] = (),
) -> list[str]:
    """`count` jobs failed into `group`, written with pipelined script calls."""
    now = time.time()
    jids = [f"{prefix}{i:05d}" for i in range(count)]
    pipe = redis_client.pipeline(transaction=False)
    for jid in jids:
        lua.script(keys=[], args=["put", now, "w", queue, jid, KLASS, "{}", 0,
                                  "tags", json.dumps(list(tags))], client=pipe)
    pipe.execute()
    for _ in range(0, count, 1000):
        lua("pop", now, queue, "bulk-worker", 1000)
    for jid in jids:
        lua.script(keys=[], args=["fail", now, jid, "bulk-worker", group, "boom"], client=pipe)
    pipe.execute()
    return jids


@pytest.mark.slow
def test_retry_a_group_of_10000_jobs(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 10_000, group="q-Boom", queue="q")
    response = post(operator, "failure_retry", {"group": "q-Boom"})
    assert qless.failed() == {}
    assert qless.queue("q").counts().waiting == 10_000
    assert messages_of(response) == ["Retried 10000 jobs of failure group q-Boom."]
    [entry] = LogEntry.objects.all()
    assert entry.object_id == "q-Boom" and "in 20 batches" in entry.change_message


@pytest.mark.slow
def test_cancel_a_group_of_10000_jobs(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_failed(lua, redis_client, 10_000, group="q-Boom", queue="q")
    ask = operator.post(url("failure_cancel"), {"group": "q-Boom"})
    assert b"Cancel all 10000 jobs of failure group q-Boom?" in ask.content
    assert qless.failed() == {"q-Boom": 10_000}
    response = post(operator, "failure_cancel", {"group": "q-Boom", "confirmed": "yes"})
    assert qless.failed() == {}
    assert qless.get_jobs(jids[:: 997]) == []
    assert messages_of(response) == ["Cancelled 10000 jobs of failure group q-Boom."]


def test_retry_group_puts_each_job_back_into_its_own_queue(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 600, group="mixed", queue="a", prefix="a")
    plant_failed(lua, redis_client, 700, group="mixed", queue="b", prefix="b")
    post(operator, "failure_retry", {"group": "mixed"})
    assert qless.failed() == {}
    assert qless.queue("a").counts().waiting == 600
    assert qless.queue("b").counts().waiting == 700


def test_retry_by_tag_only_touches_failed_jobs(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 1_200, group="g", queue="q", tags=("batch-7",))
    waiting = qless.queue("q").put(KLASS, {}, tags=["batch-7"])
    response = post(operator, "tag_retry", {"tag": "batch-7"})
    assert messages_of(response) == ["Retried 1200 failed jobs tagged batch-7."]
    assert qless.queue("q").counts().waiting == 1_201
    assert qless.get_job(waiting).state == "waiting"  # type: ignore[union-attr]


def test_cancel_by_tag_after_confirmation(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 1_200, group="g", queue="q", tags=("batch-7",))
    other = qless.queue("q").put(KLASS, {}, tags=["keep"])
    ask = operator.post(url("tag_cancel"), {"tag": "batch-7"})
    assert b"Cancel all 1200 jobs tagged batch-7?" in ask.content
    response = post(operator, "tag_cancel", {"tag": "batch-7", "confirmed": "yes"})
    assert messages_of(response) == ["Cancelled 1200 jobs tagged batch-7."]
    assert qless.tagged("batch-7").total == 0
    assert qless.get_job(other) is not None


def test_cancel_by_tag_keeps_completed_jobs(qless: Client, operator: HttpClient) -> None:
    done = qless.queue("q").put(KLASS, {}, tags=["t"])
    qless.queue("q").pop()[0].complete()
    live = qless.queue("q").put(KLASS, {}, tags=["t"])
    post(operator, "tag_cancel", {"tag": "t", "confirmed": "yes"})
    assert qless.get_job(done).state == "complete"  # type: ignore[union-attr]
    assert qless.get_job(live) is None


def test_a_selection_of_many_jobs(qless: Client, operator: HttpClient) -> None:
    jids = [qless.queue("q").put(KLASS, {}) for _ in range(120)]
    response = post(operator, "job_priority", {"jids": jids, "priority": "9"})
    assert messages_of(response) == ["Changed the priority of 120 jobs."]
    assert {job.priority for job in qless.get_jobs(jids)} == {9}
    assert LogEntry.objects.count() == 120


def test_a_selection_is_limited(qless: Client, operator: HttpClient, settings: Any) -> None:
    # Django itself refuses more than 1,000 fields; the form has its own limit behind it.
    assert operator.post(url("job_retry"), {"jids": ["j"] * 1001}).status_code == 400
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = None
    response = post(operator, "job_retry", {"jids": [f"j{i}" for i in range(1001)]})
    assert "Select at most 1000 jobs" in messages_of(response)[0]


def test_bulk_retry_reports_a_refusal(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient,
    monkeypatch: Any,
) -> None:
    plant_failed(lua, redis_client, 3, group="g", queue="q")

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise ScriptError("unfail", "Unfail(): refused for the test")

    monkeypatch.setattr(Client, "unfail", refuse)
    response = post(operator, "failure_retry", {"group": "g"})
    assert messages_of(response) == ["1 not done: g: refused for the test"]
    assert qless.failed() == {"g": 3}


def test_retry_every_group(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 30, group="a-Error", queue="a", prefix="a")
    plant_failed(lua, redis_client, 20, group="b-Error", queue="b", prefix="b")
    response = post(operator, "failure_retry_all", {"confirmed": "yes"})
    assert messages_of(response) == ["Retried 50 failed jobs."]
    assert qless.failed() == {}
    assert (qless.queue("a").counts().waiting, qless.queue("b").counts().waiting) == (30, 20)
    empty = post(operator, "failure_retry_all", {"confirmed": "yes"})
    assert messages_of(empty) == ["No failed jobs to retry."]


def test_retry_every_group_asks_first_stating_the_count(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, 30, group="a-Error", queue="a", prefix="a")
    plant_failed(lua, redis_client, 20, group="b-Error", queue="b", prefix="b")
    response = operator.post(url("failure_retry_all"), {"next": url("failures")})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Retry all 50 failed jobs of 2 failure groups?" in page
    assert '<input type="hidden" name="confirmed" value="yes">' in page
    assert qless.failed() == {"a-Error": 30, "b-Error": 20}  # nothing retried yet
    assert LogEntry.objects.count() == 0
    done = post(operator, "failure_retry_all", {"confirmed": "yes"})
    assert messages_of(done) == ["Retried 50 failed jobs."]
    assert qless.failed() == {}


def test_retry_every_group_past_the_bulk_limit_says_so() -> None:
    question = failures.retry_all_question(bulk.MAX_JOBS + 5, 3)
    assert question.startswith(f"Retry all {bulk.MAX_JOBS + 5} failed jobs of 3 failure groups?")
    assert "retry again for the rest" in question
