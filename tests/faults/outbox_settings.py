"""Settings of the outbox fault test's processes: one SQLite file every process shares."""

from __future__ import annotations

import os

from tests.faults.settings import *  # noqa: F403
from tests.faults.settings import QLESS as FAULTS_QLESS

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["QLESS_FAULTS_DB"],
        # Producers, sweepers and workers write the same file: wait for its lock.
        "OPTIONS": {"timeout": 30},
    },
}
QLESS = {
    **FAULTS_QLESS,
    "OUTBOX": os.environ.get("QLESS_FAULTS_OUTBOX", "1") == "1",
    "OUTBOX_SWEEP_AGE": 0.5,
    "OUTBOX_SWEEP_INTERVAL": 0.2,
}
