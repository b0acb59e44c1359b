"""Without PostgreSQL the PostgreSQL tests skip with the reason, except under CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import postgres_harness
from tests.postgres_harness import PostgresUnavailableError, find_binaries, postgres_unavailable


def test_no_server_binaries_is_a_reason_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_harness, "DEBIAN_BINARIES", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PostgresUnavailableError, match="apt-get install postgresql"):
        find_binaries()


def test_the_newest_version_with_both_binaries_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version, names in {"9.6": ("initdb", "postgres"), "15": ("initdb", "postgres"),
                           "16": ("initdb",), "13": ("initdb", "postgres")}.items():
        (tmp_path / version / "bin").mkdir(parents=True)
        for name in names:
            (tmp_path / version / "bin" / name).touch()
    monkeypatch.setattr(postgres_harness, "DEBIAN_BINARIES", tmp_path)
    monkeypatch.setenv("PATH", "")
    assert find_binaries() == tmp_path / "15" / "bin"


def test_a_developer_machine_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server binaries"):
        postgres_unavailable("no PostgreSQL server binaries")


def test_under_ci_it_is_a_failure_not_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no PostgreSQL server binaries"):
        postgres_unavailable("no PostgreSQL server binaries")
