"""The PostgreSQL runs' counts, one line each in the terminal summary (with or without -s)."""

from __future__ import annotations

from typing import Any

import pytest

_runs: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the summary line each run left in its user properties."""
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == "postgres-run":
            _runs.append(value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """`tests/<path>: N passed ... in Xs` per suite run on PostgreSQL."""
    if not _runs:
        return
    terminalreporter.section("suites run on PostgreSQL")
    for path, summary in _runs:
        terminalreporter.write_line(f"{path}: {summary}")
