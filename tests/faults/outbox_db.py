"""The database the outbox fault test's processes share: a SQLite file or a PostgreSQL one.

Either is named to the processes by $QLESS_FAULTS_DB (`tests/faults/outbox_settings.py`):
a file path, or a postgres:// URL of a database on the suite's private cluster. The test
reads and plants rows straight through the driver, as another process would.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.faults.fleet import ROOT
from tests.postgres_harness import PostgresCluster

TABLE = "django_qless_outbox"
#: The settings of the processes sharing the database.
SETTINGS = "tests.faults.outbox_settings"
#: The database of the migrate runs on PostgreSQL, copied by every test.
TEMPLATE = "outbox_template"

_numbers = itertools.count()


class OutboxDatabase(Protocol):
    """What the test needs of the shared database."""

    #: The value of $QLESS_FAULTS_DB for the processes.
    setting: str

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (`%s` placeholders) in its own transaction; returns its rows."""

    def drop(self) -> None:
        """Remove the database."""


def rows(db: OutboxDatabase) -> list[str]:
    """The jids of the outbox rows."""
    return [jid for (jid,) in db.execute(f"SELECT jid FROM {TABLE}")]  # noqa: S608


@dataclass
class SqliteFile:
    """A SQLite file every process opens."""

    path: Path

    @property
    def setting(self) -> str:
        """The file's path."""
        return str(self.path)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement, waiting for the file's lock as the processes do."""
        with sqlite3.connect(self.path, timeout=30) as conn:
            return conn.execute(sql.replace("%s", "?"), params).fetchall()

    def drop(self) -> None:
        """Remove the file."""
        self.path.unlink(missing_ok=True)


@dataclass
class PostgresDatabase:
    """One database of the suite's PostgreSQL cluster, copied from a migrated template."""

    cluster: PostgresCluster
    name: str

    @classmethod
    def copy_of(cls, cluster: PostgresCluster, template: str) -> PostgresDatabase:
        """A new database holding what `template` holds (its tables, migrated once)."""
        name = f"outbox_{next(_numbers)}"
        cluster.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return cls(cluster, name)

    @property
    def setting(self) -> str:
        """The database's postgres:// URL."""
        return self.cluster.url(self.name)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in a transaction of its own."""
        import psycopg  # noqa: PLC0415 - optional: only the PostgreSQL variant needs it

        with psycopg.connect(self.setting) as conn, conn.cursor() as cursor:
            cursor.execute(sql.encode(), params)
            return cursor.fetchall() if cursor.description else []

    def drop(self) -> None:
        """Drop the database, closing what a killed process may have left connected."""
        self.cluster.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def migrate(db: OutboxDatabase) -> None:
    """Create every table in a database, as `manage.py migrate` does."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "QLESS_FAULTS_DB": db.setting,
           "QLESS_FAULTS_URL": "redis://127.0.0.1:1/0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tests.faults.outbox_producer", "migrate"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr

