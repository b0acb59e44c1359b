"""The outbox settings are validated by name; the check warns about a missing table."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.checks import Warning as CheckWarning
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import ConnectionHandler

from django_qless.conf import get_settings
from django_qless.conf.reader import problems
from django_qless.conf.schema import OutboxSettings
from django_qless.core import Client
from django_qless.outbox import tables
from django_qless.outbox.checks import check_outbox_table
from django_qless.outbox.models import OutboxEntry
from tests.testapp.qless_jobs import add

ROOT = Path(__file__).resolve().parents[2]


def test_defaults(qless_url: str) -> None:
    assert get_settings().outbox == OutboxSettings(
        enabled=True, sweep_age=5.0, sweep_interval=5.0, batch_size=500
    )


def test_values_are_read(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": qless_url, "OUTBOX": False, "OUTBOX_SWEEP_AGE": 0.5,
                      "OUTBOX_SWEEP_INTERVAL": 2, "OUTBOX_BATCH_SIZE": 50}
    assert get_settings().outbox == OutboxSettings(False, 0.5, 2.0, 50)


@pytest.mark.parametrize(("key", "value"), [
    ("OUTBOX", "yes"), ("OUTBOX", 1), ("OUTBOX_SWEEP_AGE", 0), ("OUTBOX_SWEEP_AGE", -1),
    ("OUTBOX_SWEEP_AGE", float("nan")), ("OUTBOX_SWEEP_INTERVAL", "5"),
    ("OUTBOX_SWEEP_INTERVAL", True), ("OUTBOX_BATCH_SIZE", 0), ("OUTBOX_BATCH_SIZE", 2.5),
])
def test_a_bad_value_is_an_error_naming_its_key(
    settings: Any, qless_url: str, key: str, value: Any
) -> None:
    settings.QLESS = {"URL": qless_url, key: value}
    [problem] = problems()
    assert (problem.id, problem.key) == ("django_qless.E003", f"QLESS[{key!r}]")


def test_an_unknown_outbox_key_is_flagged(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": qless_url, "OUTBOX_AGE": 3}
    [problem] = problems()
    assert (problem.id, problem.key) == ("django_qless.E002", "QLESS['OUTBOX_AGE']")


@pytest.fixture
def dropped_table() -> Iterator[None]:
    """The outbox table dropped, as in a database not migrated since the upgrade."""
    with connection.schema_editor() as editor:
        editor.delete_model(OutboxEntry)
    tables.ready.cache_clear()
    yield
    with connection.schema_editor() as editor:
        editor.create_model(OutboxEntry)
    tables.ready.cache_clear()


@pytest.mark.django_db(transaction=True)
def test_the_check_is_quiet_when_the_table_exists(qless_url: str) -> None:
    assert check_outbox_table(databases=["default"]) == []
    assert not any(m.id == "django_qless.W010" for m in run_checks(databases=["default"]))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("dropped_table")
def test_the_check_warns_when_the_table_is_missing(settings: Any, qless_url: str) -> None:
    [warning] = check_outbox_table(databases=["default"])
    assert isinstance(warning, CheckWarning) and warning.id == "django_qless.W010"
    assert "django_qless_outbox" in warning.msg and "migrate" in str(warning.hint)
    assert any(m.id == "django_qless.W010" for m in run_checks(databases=["default"]))
    settings.QLESS = {"URL": qless_url, "OUTBOX": False}
    assert check_outbox_table(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("dropped_table")
def test_migrate_s_own_checks_do_not_ask_for_migrate_and_check_still_does() -> None:
    out, err = StringIO(), StringIO()
    call_command("migrate", database="default", skip_checks=False, verbosity=0,
                 stdout=out, stderr=err)
    assert "W010" not in out.getvalue() + err.getvalue()
    call_command("check", databases=["default"], stdout=out, stderr=err)
    assert "django_qless.W010" in err.getvalue()


FRESH_PROJECT_SETTINGS = """
SECRET_KEY = "fresh-project"
USE_TZ = True
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": {db!r}}}}}
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django_qless"]
QLESS = {{"URL": {url!r}}}
"""


def test_a_fresh_project_s_migrate_prints_no_w010(tmp_path: Path, qless_url: str) -> None:
    (tmp_path / "fresh_settings.py").write_text(
        FRESH_PROJECT_SETTINGS.format(db=str(tmp_path / "db.sqlite3"), url=qless_url))

    def manage(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "django", *args], cwd=tmp_path, capture_output=True,
            text=True, check=False, timeout=120,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{tmp_path}",
                 "DJANGO_SETTINGS_MODULE": "fresh_settings"},
        )
        assert result.returncode == 0, result.stderr
        return result.stdout + result.stderr

    assert "django_qless.W010" in manage("check", "--database", "default")
    migrated = manage("migrate")
    assert "Applying django_qless.0002_outbox... OK" in migrated
    assert "W010" not in migrated
    assert "W010" not in manage("check", "--database", "default")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("dropped_table")
def test_without_the_table_an_on_commit_enqueue_is_put_at_commit(qless: Client) -> None:
    with transaction.atomic():
        jid = add.enqueue(1, 2)
        assert qless.get_job(jid) is None
    assert qless.get_job(jid) is not None


def test_the_check_needs_a_database_to_run() -> None:
    # Tagged `database`: a plain `manage.py check` does not query the database.
    assert check_outbox_table(databases=None) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("dropped_table")
def test_qless_outbox_names_a_database_without_the_table(qless_url: str) -> None:
    with pytest.raises(CommandError, match="no outbox table in database default: run manage.py"):
        call_command("qless_outbox", "--database", "default", stdout=StringIO())


def test_a_project_without_a_database_has_no_outbox_to_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DATABASES = {} gives Django's dummy backend, which raises on any query: a worker of
    # such a project (a pure Redis one) must not try to sweep it every few seconds.
    monkeypatch.setattr(tables, "connections", ConnectionHandler({}))
    assert tables.outbox_databases() == []
    monkeypatch.setattr(tables, "connections", ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}))
    assert tables.outbox_databases() == ["default"]
