"""The recurring page's cron schedules: next five runs in two zones, and Run now."""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.core import Client
from django_qless.core.crons import jid_stem
from django_qless.schedules import cron
from tests.admin.conftest import logged_in, messages_of, post, url
from tests.recurring.cron_helpers import QUEUE, define


def run_now_jids(qless: Client) -> list[str]:
    """Jids of the jobs `Run now` put for `morning` (not their history keys)."""
    keys = [(k.decode() if isinstance(k, bytes) else k).removeprefix("ql:j:")
            for k in qless.redis.scan_iter(f"ql:j:{jid_stem('morning')}-now-*")]
    return [key for key in keys if key.count("-") == 3]


@pytest.fixture
def paris(qless: Client) -> None:
    """A weekday 09:00 schedule in Paris (the page reads the real clock)."""
    define(qless, "0 9 * * MON-FRI", tz="Europe/Paris", name="morning")


def expected_runs(user_zone: str) -> list[tuple[str, str]]:
    """The next five runs as the page writes them: Paris, then the user's zone."""
    paris_zone, user = zoneinfo.ZoneInfo("Europe/Paris"), zoneinfo.ZoneInfo(user_zone)
    runs = cron("0 9 * * MON-FRI", tz="Europe/Paris").next_runs(time.time(), 5)
    moments = [dt.datetime.fromtimestamp(t, dt.timezone.utc) for t in runs]
    return [(m.astimezone(paris_zone).strftime("%Y-%m-%d %H:%M %Z"),
             m.astimezone(user).strftime("%Y-%m-%d %H:%M %Z")) for m in moments]


@pytest.mark.usefixtures("paris")
@pytest.mark.parametrize("user_zone", ["America/New_York", "Asia/Tokyo"])
def test_next_five_runs_in_both_zones(viewer: HttpClient, settings: Any,
                                      user_zone: str) -> None:
    settings.TIME_ZONE = user_zone
    page = viewer.get(url("recurring_list")).content.decode()
    assert "Cron schedules" in page and "morning" in page
    assert "<code>0 9 * * MON-FRI</code> Europe/Paris" in page
    for in_zone, for_user in expected_runs(user_zone):
        assert "09:00 CE" in in_zone  # 09:00 CET or CEST, whatever the season
        assert f">{in_zone}</time>" in page
        assert f"/ {for_user}</span>" in page
    assert f"yours, {user_zone}" in page
    # A viewer cannot run it: no button.
    assert "Run now" not in page


@pytest.mark.usefixtures("paris")
def test_run_now_needs_the_recurring_permission(
    make_user: Callable[..., User], qless: Client
) -> None:
    viewer = logged_in(make_user("viewer", perms=("view_qless",)))
    response = viewer.post(url("recurring_cron_run"), {"name": "morning", "confirmed": "yes"})
    assert response.status_code == 403
    assert run_now_jids(qless) == []
    assert LogEntry.objects.count() == 0


@pytest.mark.usefixtures("paris")
def test_run_now_asks_puts_one_job_and_is_audited(operator: HttpClient,
                                                  qless: Client) -> None:
    page = operator.get(url("recurring_list")).content.decode()
    assert "Run now" in page
    ask = operator.post(url("recurring_cron_run"), {"name": "morning"})
    assert ask.status_code == 200 and "Run a cron schedule now" in ask.content.decode()
    assert run_now_jids(qless) == []
    done = post(operator, "recurring_cron_run", {"name": "morning", "confirmed": "yes"})
    [jid] = run_now_jids(qless)
    job = qless.get_job(jid)
    assert job is not None and (job.state, job.queue_name) == ("waiting", QUEUE)
    assert any(jid in message for message in messages_of(done))
    [entry] = LogEntry.objects.all()
    assert entry.object_id == "morning" and jid in entry.change_message
    # A second Run now is a second job (a jid of its own), not a slot's.
    post(operator, "recurring_cron_run", {"name": "morning", "confirmed": "yes"})
    assert len(run_now_jids(qless)) == 2


def test_run_now_of_an_unknown_schedule_says_so(operator: HttpClient) -> None:
    done = post(operator, "recurring_cron_run", {"name": "nope", "confirmed": "yes"})
    assert "No cron schedule 'nope'." in messages_of(done)
    assert LogEntry.objects.count() == 0


def test_no_cron_section_without_cron_schedules(viewer: HttpClient) -> None:
    assert "Cron schedules" not in viewer.get(url("recurring_list")).content.decode()
