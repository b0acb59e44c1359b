"""Packaging: the support matrix in pyproject.toml and README, and CI's dist content check."""

from __future__ import annotations

import importlib.util
import io
import re
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
DJANGOS = ("5.2", "6.0", "6.1")
# Standard-library names newer than Python 3.10, the oldest supported version (CI runs 3.11
# and 3.12, so nothing else would notice them).
NEWER_THAN_310 = re.compile(
    r"from datetime import [^\n]*\bUTC\b|\b(?:datetime|dt)\.UTC\b|^\s*import tomllib|\bStrEnum\b"
    r"|asyncio\.TaskGroup|asyncio\.timeout\(|\bexcept\*|typing import [^\n]*\bSelf\b",
    re.MULTILINE,
)


def project() -> dict[str, object]:
    """The [project] table of pyproject.toml."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        table: dict[str, object] = tomllib.load(handle)["project"]
    return table


def check_dist() -> ModuleType:
    """CI's .ci/check_dist.py, imported from its path (.ci is not a package)."""
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / ".ci" / "check_dist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_classifiers_state_the_matrix() -> None:
    """Every supported Python and Django has its classifier, and nothing older does."""
    classifiers = project()["classifiers"]
    assert isinstance(classifiers, list)
    stated_pythons = {c.rsplit(" :: ", 1)[1] for c in classifiers
                      if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    stated_djangos = {c.rsplit(" :: ", 1)[1] for c in classifiers
                      if re.fullmatch(r"Framework :: Django :: \d+\.\d+", c)}
    assert stated_pythons == set(PYTHONS)
    assert stated_djangos == set(DJANGOS)


def test_dependencies_require_the_oldest_supported_versions() -> None:
    """Django 4.2 is dropped and Python 3.10 is the floor."""
    assert "Django>=5.2" in project()["dependencies"]  # type: ignore[operator]
    assert project()["requires-python"] == ">=3.10"


def test_readme_states_the_matrix() -> None:
    """README's support sentence names every Python and Django of the classifiers."""
    intro = (ROOT / "README.md").read_text().split("## ", 1)[0]
    sentence = next(line for line in re.split(r"(?<=\.)\s+(?=[A-Z])", intro.replace("\n", " "))
                    if "Django 5.2" in line)
    assert f"Python {PYTHONS[0]} to {PYTHONS[-1]}" in sentence
    assert all(version in sentence for version in DJANGOS)


def test_package_uses_no_standard_library_names_newer_than_python_310() -> None:
    """Python 3.10 is supported: no module of the package needs 3.11's additions."""
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for path in sorted((ROOT / "django_qless").rglob("*.py"))
        for match in NEWER_THAN_310.finditer(path.read_text())
    ]
    assert offenders == []


def wheel_bytes(names: list[str]) -> io.BytesIO:
    """An in-memory wheel holding empty files of the given names."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, "")
    buffer.seek(0)
    return buffer


def write_sdist(path: Path, names: list[str]) -> None:
    """A gzipped sdist at path holding empty files under its top directory."""
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(f"django_qless-0.1.0/{name}")
            archive.addfile(info, io.BytesIO(b""))


def test_check_dist_accepts_a_complete_wheel_and_refuses_a_cache(tmp_path: Path) -> None:
    """The CI check finds a missing data file and a shipped __pycache__."""
    module = check_dist()
    complete = sorted(set(module.REQUIRED_IN_WHEEL) | module.package_data_files(ROOT))
    good, bad = tmp_path / "good.whl", tmp_path / "bad.whl"
    good.write_bytes(wheel_bytes(complete).getvalue())
    bad.write_bytes(wheel_bytes(
        [name for name in complete if not name.endswith("qless.lua")]
        + ["django_qless/__pycache__/apps.cpython-312.pyc"]).getvalue())
    assert module.check_wheel(good, ROOT) == []
    problems = module.check_wheel(bad, ROOT)
    assert any("missing django_qless/core/qless.lua" in p for p in problems)
    assert any("__pycache__" in p for p in problems)


def test_check_dist_refuses_caches_and_site_builds_in_the_sdist(tmp_path: Path) -> None:
    """The sdist check wants the project files and no caches, site build or Redis data."""
    module = check_dist()
    required = [*module.REQUIRED_IN_SDIST, "django_qless/__init__.py"]
    good, bad = tmp_path / "good.tar.gz", tmp_path / "bad.tar.gz"
    write_sdist(good, required)
    write_sdist(bad, [*required, ".mypy_cache/x.json", "site/index.html",
                      "example_project/.redis/dump.rdb"])
    assert module.check_sdist(good) == []
    assert len(module.check_sdist(bad)) == 3
