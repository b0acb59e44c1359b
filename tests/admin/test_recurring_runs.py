"""Recurring pages: each template's last run and next runs, Run now, the managed notice."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client as HttpClient
from django.utils import timezone

from django_qless.core import Client, keys
from django_qless.core.crons import CronStore, slot_jid
from django_qless.recurring import sync_schedules
from django_qless.schedules import MANAGED_TAG, schedule_jid
from tests.admin.conftest import KLASS, logged_in, messages_of, post, url
from tests.recurring.cron_helpers import define

DATA = {"args": [1, 2], "kwargs": {}}


def text(response: object) -> str:
    """A page's HTML."""
    return response.content.decode()  # type: ignore[attr-defined]


def shown(seconds: float) -> str:
    """A time as the pages write it (the `date` filter, in the current zone)."""
    moment = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


def spawn(qless: Client, queue: str = "jobs") -> str:
    """Let the queue spawn what is due (a pop does), and return the popped job's jid."""
    [job] = qless.queue(queue).pop()
    return job.jid


@pytest.fixture
def hourly(qless: Client) -> str:
    """A template due now (offset 0), every hour, with priority, tags and retries of its own."""
    return qless.queue("jobs").recur(KLASS, DATA, 3600, jid="hourly", priority=7,
                                     tags=["nightly"], retries=3)


def test_last_run_is_the_latest_spawn_with_its_outcome(
    viewer: HttpClient, qless: Client, hourly: str
) -> None:
    assert "none yet" in text(viewer.get(url("recurring", jid=hourly)))
    jid = spawn(qless)
    assert jid == "hourly-1"
    job = qless.get_job(jid)
    assert job is not None
    job.complete()
    done = qless.get_job(jid)
    assert done is not None
    page = text(viewer.get(url("recurring", jid=hourly)))
    assert "none yet" not in page
    assert url("job", jid=jid) in page
    assert 'qless-state-complete">complete</span>' in page
    spawned, completed = done.history[0].when, done.history[-1].when
    assert f">{shown(spawned)}</time>" in page and "done <time" in page
    assert f">{shown(completed)}</time>" in page
    listed = text(viewer.get(url("recurring_list") + "?queue=jobs"))
    assert url("job", jid=jid) in listed and "Last run" in listed


def test_last_run_follows_the_count_and_says_when_the_job_is_gone(
    viewer: HttpClient, qless: Client, hourly: str
) -> None:
    spawn(qless)
    # The next spawns: the count moves on, and the page follows it.
    qless.recurring(hourly).update(interval=1)  # type: ignore[union-attr]
    qless.redis.zadd(keys.queue_set("jobs", "recur"), {hourly: qless.now() - 1})
    second = spawn(qless)
    assert second == "hourly-2"
    qless.cancel(second)
    page = text(viewer.get(url("recurring", jid=hourly)))
    assert "hourly-2" in page and "gone from Redis (expired or cancelled)" in page
    assert url("job", jid="hourly-1") not in page


def test_next_runs_are_the_stored_next_then_every_interval(
    viewer: HttpClient, qless: Client
) -> None:
    qless.queue("jobs").recur(KLASS, DATA, 90, jid="later", offset=600)
    first = qless.redis.zscore(keys.queue_set("jobs", "recur"), "later")
    assert first is not None
    page = text(viewer.get(url("recurring", jid="later")))
    runs = [shown(first + step * 90) for step in range(6)]
    for run in runs[:5]:
        assert f">{run}</time>" in page
    assert f">{runs[5]}</time>" not in page
    assert "(in 9 min" in page or "(in 10 min" in page
    listed = text(viewer.get(url("recurring_list") + "?queue=jobs"))
    assert all(f">{run}</time>" in listed for run in runs[:3])
    assert f">{runs[3]}</time>" not in listed


def test_a_cron_schedules_last_run_is_its_latest_slot_job_due_by_now(
    viewer: HttpClient, qless: Client
) -> None:
    definition = define(qless, "* * * * *", name="minutely")
    page = text(viewer.get(url("recurring_list")))
    assert "minutely" in page and "none yet" in page
    now = qless.now()
    past, future = float(int(now) - 120), float(int(now) + 30)
    CronStore(qless).put_slots(definition, [past, future], now)
    page = text(viewer.get(url("recurring_list")))
    last = slot_jid("minutely", past, definition.digest)
    assert url("job", jid=last) in page
    assert 'qless-state-waiting">waiting</span>' in page
    assert f"due <time datetime=\"{dt.datetime.fromtimestamp(past, dt.timezone.utc):%Y}" in page
    assert f">{shown(past)}</time>" in page
    # A slot put ahead of its instant is not a run yet.
    assert slot_jid("minutely", future, definition.digest) not in page


def test_run_now_needs_the_recurring_permission(
    make_user: Callable[..., User], qless: Client, hourly: str
) -> None:
    viewer = logged_in(make_user("viewer", perms=("view_qless",)))
    assert "Run now" not in text(viewer.get(url("recurring", jid=hourly)))
    assert "Run now" not in text(viewer.get(url("recurring_list") + "?queue=jobs"))
    response = viewer.post(url("recurring_run"), {"jid": hourly, "confirmed": "yes"})
    assert response.status_code == 403
    assert qless.queue("jobs").counts().waiting == 0
    assert LogEntry.objects.count() == 0


def test_run_now_puts_one_job_like_a_spawn_and_leaves_the_schedule(
    operator: HttpClient, qless: Client, hourly: str
) -> None:
    assert "Run now" in text(operator.get(url("recurring", jid=hourly)))
    assert "Run now" in text(operator.get(url("recurring_list") + "?queue=jobs"))
    recur = keys.queue_set("jobs", "recur")
    before = qless.redis.zscore(recur, hourly)
    ask = operator.post(url("recurring_run"), {"jid": hourly})
    assert ask.status_code == 200 and "Run a recurring job now" in text(ask)
    assert qless.queue("jobs").counts().waiting == 0
    done = post(operator, "recurring_run", {"jid": hourly, "confirmed": "yes"})
    [jid] = _waiting(qless)
    assert jid.startswith("hourly-now-")
    job = qless.get_job(jid)
    assert job is not None
    assert (job.klass, job.queue_name, job.priority, job.tags, job.retries) == (
        KLASS, "jobs", 7, ("nightly",), 3)
    assert json.loads(job.raw_data) == DATA
    assert any(jid in message for message in messages_of(done))
    [entry] = LogEntry.objects.all()
    assert entry.object_id == hourly and jid in entry.change_message
    template = qless.recurring(hourly)
    assert template is not None and template.count == 0
    assert qless.redis.zscore(recur, hourly) == before


def _waiting(qless: Client) -> list[str]:
    """The jids waiting in queue `jobs` (without spawning: peeking would)."""
    return [j.decode() if isinstance(j, bytes) else j
            for j in qless.redis.zrange(keys.queue_set("jobs", "work"), 0, -1)]


def test_run_now_of_an_unknown_template_says_so(operator: HttpClient) -> None:
    done = post(operator, "recurring_run", {"jid": "nope", "confirmed": "yes"})
    assert "No recurring job 'nope'." in messages_of(done)
    assert LogEntry.objects.count() == 0


def test_no_managed_notice_on_a_template_of_its_own(operator: HttpClient, hourly: str) -> None:
    page = text(operator.get(url("recurring", jid=hourly)))
    assert "Edit" in page and "qless_recur" not in page


def test_a_declared_template_says_a_sync_reverts_edits(
    operator: HttpClient, qless: Client
) -> None:
    sync_schedules(clients={"default": qless})
    jid = schedule_jid("recurapp.poll_feed")
    page = text(operator.get(url("recurring", jid=jid)))
    assert "Managed by <code>manage.py qless_recur</code>" in page
    assert "<strong>recurapp.poll_feed</strong>" in page
    assert "edits made here are reverted by the next sync" in page


def test_a_managed_template_no_longer_declared_says_prune_deletes_it(
    operator: HttpClient, qless: Client
) -> None:
    qless.queue("jobs").recur(KLASS, DATA, 60, jid="recur-0000000000000000",
                              tags=[MANAGED_TAG])
    page = text(operator.get(url("recurring", jid="recur-0000000000000000")))
    assert "Managed by <code>manage.py qless_recur</code>" in page
    assert "no longer declared" in page and "qless_recur --prune</code> deletes it" in page
    assert "reverted by the next sync" not in page


def test_the_notice_goes_with_the_edit_form(viewer: HttpClient, qless: Client) -> None:
    sync_schedules(clients={"default": qless})
    page = text(viewer.get(url("recurring", jid=schedule_jid("recurapp.poll_feed"))))
    assert "Managed by" not in page  # a viewer has no form to be warned about
