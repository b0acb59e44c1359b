"""Crons check-ins for the jobs of declared schedules, when the integration is asked to."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client
from django_qless.core.crons import slot_jid
from django_qless.integrations.sentry import QlessIntegration
from django_qless.schedules import schedule_jid
from django_qless.worker import Worker

from . import sentry_jobs  # noqa: F401 - registers the jobs
from .sentry_support import SentryRun

Run = Callable[..., Worker]

RECURRING = {
    "every-5-min": {"JOB": "sentry.ok", "EVERY": 300, "QUEUE": "q"},
    "nightly-report": {"JOB": "sentry.crumbs", "CRON": "@daily", "TZ": "Europe/Paris",
                       "KWARGS": {"fail": True}, "QUEUE": "q"},
    "quiet-hourly": {"JOB": "sentry.ok", "EVERY": 3600, "QUEUE": "q"},
}


@pytest.fixture
def scheduled(settings: Any, qless: Client) -> dict[str, str]:
    """One job of each schedule as qless and the cron slots put them, and a plain job."""
    settings.QLESS = {**settings.QLESS, "RECURRING": RECURRING}
    queue = qless.queue("q")
    for name in ("every-5-min", "quiet-hourly"):
        # A real qless recurring template: the pop spawns its job `<template jid>-1`.
        queue.recur("sentry.ok", {"args": [], "kwargs": {}}, 300, jid=schedule_jid(name))
    slot = slot_jid("nightly-report", time.time() // 60 * 60, "0" * 64)
    queue.put("sentry.crumbs", {"args": [], "kwargs": {"fail": True}}, jid=slot)
    plain = queue.put("sentry.ok", {"args": [], "kwargs": {}})
    return {"every-5-min": f"{schedule_jid('every-5-min')}-1",
            "quiet-hourly": f"{schedule_jid('quiet-hourly')}-1",
            "nightly-report": slot, "plain": plain}


def check_ins(sentry: SentryRun) -> dict[str, list[dict[str, Any]]]:
    """The check-ins sent, by monitor."""
    found: dict[str, list[dict[str, Any]]] = {}
    for check_in in sentry.items("check_in"):
        found.setdefault(check_in["monitor_slug"], []).append(check_in)
    return found


def test_scheduled_jobs_check_in_in_progress_then_ok_or_error(
    sentry: SentryRun, scheduled: dict[str, str], run_worker: Run
) -> None:
    sentry.init([QlessIntegration(monitor_schedules=True, exclude_schedules=["quiet-.*"])])
    run_worker("q")
    assert set(sentry.by_jid()) == set(scheduled.values())  # every job ran
    sent = check_ins(sentry)
    assert sorted(sent) == ["every-5-min", "nightly-report"]
    for name, outcome in (("every-5-min", "ok"), ("nightly-report", "error")):
        started, ended = sent[name]
        assert (started["status"], ended["status"]) == ("in_progress", outcome)
        assert started["check_in_id"] == ended["check_in_id"]
        assert ended["duration"] >= 0
    assert sent["every-5-min"][0]["monitor_config"] == {
        "schedule": {"type": "interval", "value": 5, "unit": "minute"}}
    assert sent["nightly-report"][0]["monitor_config"] == {
        "schedule": {"type": "crontab", "value": "0 0 * * *"}, "timezone": "Europe/Paris"}


def test_no_check_in_unless_asked_for(
    sentry: SentryRun, scheduled: dict[str, str], run_worker: Run
) -> None:
    sentry.init()
    run_worker("q")
    assert set(sentry.by_jid()) == set(scheduled.values())
    assert sentry.items("check_in") == []


def test_a_bad_exclusion_pattern_fails_at_init() -> None:
    with pytest.raises(re.error):
        QlessIntegration(monitor_schedules=True, exclude_schedules=["nightly-("])
