"""Settings of the outbox fault test's processes: one database every process shares.

$QLESS_FAULTS_DB is a SQLite file's path, or the postgres:// URL of a database on the
suite's PostgreSQL cluster (`tests/faults/outbox_db.py`). $QLESS_FAULTS_CONN_MAX_AGE sets
its CONN_MAX_AGE (seconds, or `none`: persistent connections; default 0).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from tests.faults.settings import *  # noqa: F403
from tests.faults.settings import QLESS as FAULTS_QLESS


def shared_database(setting: str) -> dict[str, Any]:
    """The `default` alias for a file path or a postgres:// URL."""
    if setting.startswith("postgres://"):
        url = urlsplit(setting)
        return {"ENGINE": "django.db.backends.postgresql", "NAME": url.path.lstrip("/"),
                "USER": url.username, "HOST": url.hostname, "PORT": str(url.port)}
    # Producers, sweepers and workers write the same file: wait for its lock.
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": setting, "OPTIONS": {"timeout": 30}}


_max_age = os.environ.get("QLESS_FAULTS_CONN_MAX_AGE", "0")
DATABASES = {"default": {**shared_database(os.environ["QLESS_FAULTS_DB"]),
                         "CONN_MAX_AGE": None if _max_age == "none" else int(_max_age)}}
QLESS = {
    **FAULTS_QLESS,
    "OUTBOX": os.environ.get("QLESS_FAULTS_OUTBOX", "1") == "1",
    "OUTBOX_SWEEP_AGE": 0.5,
    "OUTBOX_SWEEP_INTERVAL": 0.2,
}
