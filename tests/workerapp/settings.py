"""Settings for worker subprocesses: the test settings, with QLESS from the environment."""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403

QLESS = {
    "URL": os.environ["QLESS_TEST_URL"],
    "WORKER": {"POLL_INTERVAL": 0.2},
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django_qless": {"handlers": ["stderr"], "level": "DEBUG"}},
}
