"""Each action's effect in Redis, its admin-log entry, its messages, and its refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django import forms as django_forms
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.test import Client as HttpClient

from django_qless import models
from django_qless.admin import forms
from django_qless.connection import get_client
from django_qless.core import Client, keys
from tests.admin.conftest import KLASS, World, messages_of, post, url


def last_log() -> LogEntry:
    """The newest admin-log entry."""
    entry = LogEntry.objects.order_by("-id").first()
    assert entry is not None
    return entry


def state(qless: Client, jid: str) -> str | None:
    """A job's state (None once it is gone)."""
    job = qless.get_job(jid)
    return None if job is None else job.state


def test_retry_requeues_a_failed_job_and_logs_it(
    world: World, qless: Client, operator: HttpClient
) -> None:
    response = post(operator, "job_retry", {"jids": [world.failed]})
    assert state(qless, world.failed) == "waiting"
    assert qless.failed() == {}
    assert messages_of(response) == ["Retried 1 job."]
    entry = last_log()
    assert entry.object_id == world.failed and entry.action_flag == CHANGE
    assert entry.content_type == ContentType.objects.get_for_model(
        models.Job, for_concrete_model=False
    )
    assert entry.get_change_message() == (
        f"Retried job {world.failed} in queue broken (connection 'default')"
    )
    assert entry.user.username == "operator"


def test_retrying_twice_is_a_no_op_with_a_message(
    world: World, qless: Client, operator: HttpClient
) -> None:
    post(operator, "job_retry", {"jids": [world.failed]})
    count = LogEntry.objects.count()
    response = post(operator, "job_retry", {"jids": [world.failed]})
    assert messages_of(response) == [f"1 not done: {world.failed}: is waiting, not failed"]
    assert LogEntry.objects.count() == count


def test_timeout_ends_a_running_lease(world: World, qless: Client, operator: HttpClient) -> None:
    post(operator, "job_timeout", {"jids": [world.running]})
    assert state(qless, world.running) == "stalled"
    response = post(operator, "job_timeout", {"jids": [world.waiting]})
    assert "is waiting, not running" in messages_of(response)[0]


def test_cancel_asks_first_then_deletes(world: World, qless: Client, operator: HttpClient) -> None:
    ask = operator.post(url("job_cancel"), {"jids": [world.waiting]})
    assert ask.status_code == 200 and b"Cancel 1 job?" in ask.content
    assert b'name="confirmed" value="yes"' in ask.content
    assert state(qless, world.waiting) == "waiting"
    response = post(operator, "job_cancel", {"jids": [world.waiting], "confirmed": "yes"})
    assert state(qless, world.waiting) is None
    assert messages_of(response) == ["Cancelled 1 job."]
    assert last_log().action_flag == DELETION


def test_cancel_leaves_a_completed_job_with_a_message(
    world: World, qless: Client, operator: HttpClient
) -> None:
    response = post(operator, "job_cancel", {"jids": [world.complete], "confirmed": "yes"})
    assert state(qless, world.complete) == "complete"
    assert messages_of(response) == [f"1 not done: {world.complete}: is complete, not cancelled"]


def test_cancel_of_a_job_others_depend_on_lists_them_and_cancels_them_too(
    world: World, qless: Client, operator: HttpClient
) -> None:
    grandchild = qless.queue("jobs").put(KLASS, {}, depends=[world.child])
    ask = operator.post(url("job_cancel"), {"jids": [world.parent]})
    page = ask.content.decode()
    assert ask.status_code == 200
    assert "2 other jobs depend on it" in page and "Yes, cancel all 3" in page
    for jid in (world.child, grandchild):
        assert f'<input type="hidden" name="jids" value="{jid}">' in page
    fields: dict[str, Any] = {"jids": [world.parent, world.child, grandchild],
                              "confirmed": "yes"}
    response = post(operator, "job_cancel", fields)
    assert messages_of(response) == ["Cancelled 3 jobs."]
    assert [state(qless, jid) for jid in (world.parent, world.child, grandchild)] == [None] * 3


def test_a_dependent_added_after_the_confirmation_is_reported_plainly(
    world: World, qless: Client, operator: HttpClient
) -> None:
    response = post(operator, "job_cancel", {"jids": [world.parent], "confirmed": "yes"})
    assert state(qless, world.parent) == "waiting"
    [message] = messages_of(response)
    assert "other jobs now depend on it; nothing was cancelled" in message
    assert "Cancel()" not in message and "is a dependency of" not in message


def test_a_priority_change_is_logged_with_the_value_it_replaced(
    world: World, qless: Client, operator: HttpClient
) -> None:
    post(operator, "job_priority", {"jids": [world.parent, world.waiting], "priority": "77"})
    jobs = qless.get_jobs([world.parent, world.waiting])
    assert [job.priority for job in jobs] == [77, 77]
    logged = dict(LogEntry.objects.values_list("object_id", "change_message"))
    assert logged[world.parent].startswith(f"Set priority of job {world.parent} from 5 to 77 ")
    assert logged[world.waiting].startswith(f"Set priority of job {world.waiting} from 0 to 77 ")


def test_cancel_of_a_vanished_job_is_reported(world: World, operator: HttpClient) -> None:
    response = post(operator, "job_cancel", {"jids": ["gone-already"], "confirmed": "yes"})
    assert messages_of(response) == ["1 not done: gone-already: no longer exists"]


def test_move_priority_and_tags(world: World, qless: Client, operator: HttpClient) -> None:
    post(operator, "job_move", {"jids": [world.waiting], "queue": "elsewhere"})
    job = qless.get_job(world.waiting)
    assert job is not None and job.queue_name == "elsewhere" and job.state == "waiting"
    assert "from queue jobs to queue elsewhere" in last_log().change_message
    post(operator, "job_priority", {"jids": [world.waiting], "priority": "-25"})
    assert qless.get_job(world.waiting).priority == -25  # type: ignore[union-attr]
    assert f"Set priority of job {world.waiting} from 0 to -25 " in last_log().change_message
    post(operator, "job_tag", {"jids": [world.waiting], "tags": "blue, green"})
    assert qless.get_job(world.waiting).tags == ("red", "blue", "green")  # type: ignore[union-attr]
    post(operator, "job_untag", {"jids": [world.waiting], "tags": "red,green"})
    assert qless.get_job(world.waiting).tags == ("blue",)  # type: ignore[union-attr]
    assert qless.tagged("blue").jids == (world.waiting,)


@pytest.mark.parametrize(
    ("route", "body", "error"),
    [
        ("job_priority", {"priority": "abc"}, "priority: Enter a number."),
        ("job_priority", {"priority": "inf"}, "priority: Enter a number."),
        ("job_move", {"queue": "a/b"}, "invalid queue name 'a/b'"),
        ("job_move", {"queue": "has space"}, "invalid queue name 'has space'"),
        ("job_move", {"queue": "x" * 300}, "Ensure this value has at most 128 characters"),
        ("job_tag", {"tags": " , "}, "Give at least one tag."),
        ("job_retry", {}, "Select at least one job."),
    ],
)
def test_invalid_input_changes_nothing(
    route: str, body: dict[str, Any], error: str, world: World, operator: HttpClient,
    keyspace: Callable[[], dict[str, bytes]],
) -> None:
    # The page the refusal redirects to may record the minute's queue depths (the live
    # overview's own key); nothing else may change.
    sample = keys.depth(0).removesuffix("0")

    def qless_keys() -> dict[str, bytes]:
        return {key: value for key, value in keyspace().items()
                if not str(key).startswith(sample)}

    before = qless_keys()
    body = {"jids": [world.waiting], **body} if route != "job_retry" else body
    response = post(operator, route, body)
    assert qless_keys() == before
    [message] = messages_of(response)
    assert message.startswith("Nothing was changed:") and error in message
    assert LogEntry.objects.count() == 0


def test_track_and_untrack(world: World, qless: Client, operator: HttpClient) -> None:
    post(operator, "job_track", {"jids": [world.scheduled]})
    assert qless.get_job(world.scheduled).tracked  # type: ignore[union-attr]
    post(operator, "job_untrack", {"jids": [world.scheduled, world.waiting]})
    assert qless.tracked().jobs == ()
    response = post(operator, "job_untrack", {"jids": [world.waiting]})
    assert messages_of(response) == [f"1 not done: {world.waiting}: was not tracked"]


def test_untrack_a_jid_whose_job_is_gone(world: World, qless: Client, operator: HttpClient) -> None:
    qless.cancel(world.waiting)
    assert qless.tracked().expired == (world.waiting,)
    post(operator, "job_untrack", {"jids": [world.waiting]})
    assert qless.tracked().expired == ()


def test_undepend_releases_the_child(world: World, qless: Client, operator: HttpClient) -> None:
    response = post(operator, "job_undepend", {"jid": world.child, "dependency": world.parent})
    assert state(qless, world.child) == "waiting"
    assert messages_of(response) == [f"Job {world.child} no longer waits for {world.parent}."]
    again = post(operator, "job_undepend", {"jid": world.child, "dependency": world.parent})
    assert "not in the depends state" in messages_of(again)[0]


def test_pause_unpause_and_queue_settings(
    world: World, qless: Client, operator: HttpClient
) -> None:
    post(operator, "queue_pause", {"queue": "jobs"})
    assert qless.queue("jobs").paused
    post(operator, "queue_unpause", {"queue": "jobs"})
    assert not qless.queue("jobs").paused
    response = post(operator, "queue_settings",
                    {"queue": "jobs", "heartbeat": "30", "max_concurrency": "2"})
    assert qless.queue("jobs").heartbeat == 30 and qless.queue("jobs").max_concurrency == 2
    assert messages_of(response) == ["Queue jobs: heartbeat 30 s, max concurrency 2."]
    post(operator, "queue_settings", {"queue": "jobs", "heartbeat": "", "max_concurrency": ""})
    assert qless.config.get("jobs-heartbeat") is None
    assert qless.queue("jobs").max_concurrency is None
    assert LogEntry.objects.filter(object_id="jobs").count() == 4


def test_queue_settings_are_validated(world: World, qless: Client, operator: HttpClient) -> None:
    response = post(operator, "queue_settings",
                    {"queue": "jobs", "heartbeat": "0", "max_concurrency": "-1"})
    [message] = messages_of(response)
    assert "heartbeat" in message and "max_concurrency" in message
    assert qless.config.get("jobs-heartbeat") is None


def test_forget_worker(world: World, qless: Client, operator: HttpClient) -> None:
    # Last seen two hours ago: it stopped reporting, so it may be forgotten.
    qless.redis.zadd("ql:workers", {world.worker: qless.now() - 7200})
    post(operator, "worker_forget", {"name": world.worker})
    assert qless.workers.counts() == []
    assert last_log().action_flag == DELETION


def test_a_worker_still_reporting_is_not_forgotten(
    world: World, qless: Client, operator: HttpClient
) -> None:
    response = post(operator, "worker_forget", {"name": world.worker})
    assert "still reporting" in " ".join(messages_of(response))
    assert [worker.name for worker in qless.workers.counts()] == [world.worker]


def test_edit_recurring_job(world: World, qless: Client, operator: HttpClient) -> None:
    body = {"jid": world.recurring, "queue": "jobs", "interval": "300", "priority": "7",
            "retries": "2", "backlog": "3", "tags": "nightly, ops",
            "data_json": '{"token": "new"}'}
    post(operator, "recurring_update", body)
    job = qless.recurring(world.recurring)
    assert job is not None
    assert (job.interval, job.priority, job.retries, job.backlog) == (300, 7, 2, 3)
    assert set(job.tags) == {"nightly", "ops"} and job.data == {"token": "new"}
    assert "interval 300 s, priority 7" in last_log().change_message
    post(operator, "recurring_update", {**body, "tags": "", "data_json": "", "queue": "nightly"})
    job = qless.recurring(world.recurring)
    assert job is not None and job.tags == () and job.data == {"token": "new"}
    assert job.queue_name == "nightly"
    assert qless.queue("nightly").counts().recurring == 1


def test_recurring_form_errors_are_shown_on_the_page(
    world: World, qless: Client, operator: HttpClient
) -> None:
    body = {"jid": world.recurring, "queue": "a b", "interval": "0", "priority": "x",
            "retries": "-1", "backlog": "0", "tags": "", "data_json": "[1, 2]"}
    response = operator.post(url("recurring_update"), body)
    assert response.status_code == 200
    form = response.context["form"]
    assert set(form.errors) == {"queue", "interval", "priority", "retries", "data_json"}
    assert qless.recurring(world.recurring).interval == 60  # type: ignore[union-attr]


def test_delete_recurring_job_after_confirmation(
    world: World, qless: Client, operator: HttpClient
) -> None:
    ask = operator.post(url("recurring_delete"), {"jid": world.recurring})
    assert ask.status_code == 200 and b"Delete recurring job" in ask.content
    post(operator, "recurring_delete", {"jid": world.recurring, "confirmed": "yes"})
    assert qless.recurring(world.recurring) is None


def test_config_set_and_unset(world: World, qless: Client, operator: HttpClient) -> None:
    post(operator, "config_set", {"key": "heartbeat", "value": "45"})
    assert qless.config.get("heartbeat") == 45
    post(operator, "config_set", {"key": "application", "value": "shop"})
    assert qless.config.get("application") == "shop"
    post(operator, "config_unset", {"key": "heartbeat"})
    assert qless.config.get("heartbeat") == 60
    assert [e.object_id for e in LogEntry.objects.order_by("id")] == [
        "heartbeat", "application", "heartbeat"]


@pytest.mark.parametrize("value", ["abc", "0", "nan", ""])
def test_config_values_are_validated(value: str, world: World, qless: Client,
                                     operator: HttpClient) -> None:
    response = operator.post(url("config_set"), {"key": "heartbeat", "value": value})
    assert response.status_code == 200 and response.context["form"].errors
    assert qless.config.get("heartbeat") == 60


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)",
               "http://testserver.evil.example/"],
)
def test_redirects_stay_on_this_host(target: str, world: World, operator: HttpClient) -> None:
    response = operator.post(url("queue_pause"), {"queue": "jobs", "next": target})
    assert response.status_code == 302
    assert response["Location"] == url("queue", name="jobs")


def test_next_on_this_host_is_followed(world: World, operator: HttpClient) -> None:
    response = operator.post(url("queue_pause"), {"queue": "jobs", "next": url("queues")})
    assert response["Location"] == url("queues")


def test_actions_on_the_other_connection(world: World, operator: HttpClient) -> None:
    other = get_client("other")
    jid = other.queue("remote").put("k", {})
    response = operator.post(url("job_priority", alias="other"), {"jids": [jid], "priority": "3"})
    assert response.status_code == 302
    assert other.get_job(jid).priority == 3  # type: ignore[union-attr]
    assert "connection 'other'" in last_log().change_message


def test_no_form_can_name_a_job_class() -> None:
    """E7: nothing in the admin creates a job, so no form takes a klass."""
    classes = [c for c in vars(forms).values()
               if isinstance(c, type) and issubclass(c, django_forms.Form)]
    assert classes and all("klass" not in c.base_fields for c in classes)
