"""Fixtures of the integration tests: the worker tests' fixtures, and a Sentry per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.conftest import (  # noqa: F401 - fixtures shared with the worker tests
    database_reachable,
    qless,
    qless_settings,
    run_worker,
    workers,
)

from .sentry_support import SentryRun, restored_sentry


@pytest.fixture
def sentry(tmp_path: Path) -> Iterator[SentryRun]:
    """Call `sentry.init(...)` to start a client; the previous one is back after the test."""
    yield from restored_sentry(tmp_path / "sentry.jsonl")
