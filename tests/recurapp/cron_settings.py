"""Settings for qless_recur subprocesses with cron schedules declared in QLESS["RECURRING"]."""

from __future__ import annotations

import os

from django_qless.schedules import cron
from tests.settings import *  # noqa: F403

QLESS = {
    "URL": os.environ["QLESS_TEST_URL"],
    "RECURRING": {
        "minutely": {"JOB": "recurapp.vacuum", "CRON": "* * * * *", "ARGS": ["a"],
                     "QUEUE": "cron"},
        "weekdays": {"JOB": "recurapp.vacuum",
                     "EVERY": cron("0 9 * * MON-FRI", tz="Europe/Paris", catch_up="skip"),
                     "ARGS": ["b"], "QUEUE": "cron"},
    },
}
