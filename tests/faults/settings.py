"""Settings of the fault suite's worker subprocesses: QLESS and the ledger from the environment."""

from __future__ import annotations

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.faults.app"]
QLESS = {
    "URL": os.environ["QLESS_FAULTS_URL"],
    # redis-py options (e.g. socket_timeout) as JSON; the network faults set them.
    "OPTIONS": json.loads(os.environ.get("QLESS_FAULTS_OPTIONS", "{}")),
    # QLESS_FAULTS_CONCURRENCY runs the whole suite's workers at --concurrency N.
    "WORKER": {"POLL_INTERVAL": 0.2,
               "CONCURRENCY": int(os.environ.get("QLESS_FAULTS_CONCURRENCY", "1"))},
    "REQUIRE_DURABLE_REDIS": os.environ.get("QLESS_FAULTS_REQUIRE_DURABLE") == "1",
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(process)d %(levelname)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"django_qless": {"handlers": ["stderr"], "level": "INFO"}},
}
