"""Fixtures of the fault suite: private redis-servers, a worker fleet, the audit, the figures,
and a database the processes of a test share (`database`: SQLite, PostgreSQL).

Every test here is marked `faults` (run alone: `python -m pytest -m faults tests/faults`).
Each test leaves one line of figures (jobs, kills, lost, duplicates, ...) that is printed
in the terminal summary whether or not `-s` is given.

Every worker runs `--concurrency` $QLESS_FAULTS_CONCURRENCY (default 1), unless its test
asks for others through the `concurrency` fixture (`checks.AT_EACH_CONCURRENCY`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.fleet import Fleet
from tests.faults.outbox_db import (
    TEMPLATE,
    OutboxDatabase,
    PostgresDatabase,
    SqliteFile,
    migrate,
)
from tests.faults.proxy import FaultProxy
from tests.postgres_harness import PostgresCluster
from tests.redis_harness import RedisServer

MARKER = ("faults: fault-injection suite (own redis-servers and qless_worker subprocesses; "
          "run alone with -m faults)")
FIGURES_ENV = "QLESS_FAULTS_FIGURES"
#: Read by the workers' settings (tests/faults/settings.py).
CONCURRENCY_ENV = "QLESS_FAULTS_CONCURRENCY"
_figures: list[tuple[str, dict[str, Any]]] = []


def pytest_configure(config: pytest.Config) -> None:
    """Register the `faults` marker (also listed in pyproject.toml)."""
    config.addinivalue_line("markers", MARKER)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the figures a test left in its user properties."""
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == "fault-figures":
            _figures.append((report.nodeid, value))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per fault test with the figures it checked (also as JSON: $QLESS_FAULTS_FIGURES)."""
    if not _figures:
        return
    if os.environ.get(FIGURES_ENV):
        Path(os.environ[FIGURES_ENV]).write_text(json.dumps(dict(_figures), indent=1) + "\n")
    terminalreporter.section("fault suite figures")
    for nodeid, values in _figures:
        shown = " ".join(f"{key}={value}" for key, value in values.items())
        terminalreporter.write_line(f"{nodeid.split('::', 1)[-1]}: {shown}")


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The figures the test checked; reported in the terminal summary."""
    values: dict[str, Any] = {}
    started = time.monotonic()
    yield values
    values["seconds"] = round(time.monotonic() - started, 1)
    request.node.user_properties.append(("fault-figures", values))


@pytest.fixture
def start_redis() -> Iterator[Callable[..., RedisServer]]:
    """Start private redis-servers (extra arguments allowed); all stopped after the test."""
    servers: list[RedisServer] = []

    def start(*extra: str) -> RedisServer:
        server = RedisServer(extra_args=extra).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(start_redis: Callable[..., RedisServer]) -> RedisServer:
    """A fresh redis-server for this test only."""
    return start_redis()


@pytest.fixture
def concurrency() -> int:
    """How many jobs at once each worker of the test runs ($QLESS_FAULTS_CONCURRENCY)."""
    return int(os.environ.get(CONCURRENCY_ENV, "1"))


@pytest.fixture
def fleets(tmp_path: Path, concurrency: int) -> Iterator[Callable[..., Fleet]]:
    """Start worker fleets (see `Fleet`) at the test's concurrency; all stopped after it."""
    started: list[Fleet] = []

    def start(url: str, count: int = 1, *args: str, env: dict[str, str] | None = None,
              **kwargs: Any) -> Fleet:
        workdir = tmp_path / f"fleet{len(started)}"
        env = {CONCURRENCY_ENV: str(concurrency), **(env or {})}
        fleet = Fleet(url, workdir, count=count, args=args or ("q",), env=env, **kwargs)
        started.append(fleet)
        return fleet.start()

    yield start
    for fleet in started:
        fleet.stop()


@pytest.fixture
def proxy(server: RedisServer) -> Iterator[FaultProxy]:
    """A fault proxy in front of the test's redis-server."""
    started = FaultProxy("127.0.0.1", server.port).start()
    yield started
    started.close()


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with every table (migrated once; each test works on a copy)."""
    path = tmp_path_factory.mktemp("outbox") / "template.sqlite3"
    migrate(SqliteFile(path))
    return path


@pytest.fixture(scope="module")
def postgres_template(postgres: PostgresCluster) -> Iterator[PostgresCluster]:
    """A PostgreSQL database with every table (migrated once; each test works on a copy)."""
    postgres.execute(f'CREATE DATABASE "{TEMPLATE}"')
    migrate(PostgresDatabase(postgres, TEMPLATE))
    yield postgres
    postgres.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OutboxDatabase]:
    """This test's copy of the migrated database, on each engine."""
    db: OutboxDatabase
    if request.param == "sqlite":
        path = tmp_path / "db.sqlite3"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        db = SqliteFile(path)
    else:
        db = PostgresDatabase.copy_of(request.getfixturevalue("postgres_template"), TEMPLATE)
    yield db
    db.drop()
