"""A settings module that imports the schedule types, as users' settings do."""

from __future__ import annotations

import os

import django_qless
from django_qless.recurring import every
from tests.settings import *  # noqa: F403

QLESS = {
    "URL": os.environ.get("QLESS_TEST_URL", "redis://127.0.0.1:1/0"),
    "RECURRING": {
        "hourly-vacuum": {"JOB": "recurapp.vacuum", "EVERY": every(hours=1), "ARGS": ["a"]},
        "daily-vacuum": {"JOB": "recurapp.vacuum", "EVERY": django_qless.every(days=1),
                         "ARGS": ["b"]},
    },
}
