"""Settings for qless_recur subprocesses: the test settings, with QLESS from the environment."""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403

QLESS = {"URL": os.environ["QLESS_TEST_URL"]}
