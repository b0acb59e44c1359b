"""Check the built sdist and wheel: the package's data files ship, caches and site builds do not.

    python .ci/check_dist.py DIST_DIR

Standard library only, so it runs on any interpreter before anything is installed.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

PACKAGE = "django_qless"
# Files the installed app cannot work without that are not Python modules, or that a
# packaging mistake most easily drops (migrations are found by directory, not import).
REQUIRED_IN_WHEEL = (
    f"{PACKAGE}/__init__.py",
    f"{PACKAGE}/py.typed",
    f"{PACKAGE}/core/qless.lua",
    f"{PACKAGE}/core/qless_library.lua",
    f"{PACKAGE}/migrations/__init__.py",
    f"{PACKAGE}/migrations/0001_initial.py",
    f"{PACKAGE}/static/django_qless/admin.css",
    f"{PACKAGE}/templates/admin/django_qless/base.html",
)
REQUIRED_IN_SDIST = ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "PKG-INFO")
# Path parts that mark local caches, build output or the example's runtime data.
FORBIDDEN_PARTS = frozenset({
    "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
    ".benchmarks", ".redis", "_build", "site", ".git", ".venv", "dist", "build",
})
FORBIDDEN_SUFFIXES = (".pyc", ".pyo", ".rdb", ".sqlite3")


def package_data_files(source: Path) -> set[str]:
    """Every non-Python file inside the source package (what the wheel must carry too)."""
    return {
        path.relative_to(source).as_posix()
        for path in (source / PACKAGE).rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }


def forbidden(names: list[str]) -> list[str]:
    """The archive members that are caches, build output or local runtime data."""
    return [
        name for name in names
        if FORBIDDEN_PARTS.intersection(PurePosixPath(name).parts)
        or name.endswith(FORBIDDEN_SUFFIXES)
    ]


def check_wheel(wheel: Path, source: Path) -> list[str]:
    """Problems with the wheel's file list."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    missing = sorted((set(REQUIRED_IN_WHEEL) | package_data_files(source)) - set(names))
    problems = [f"{wheel.name}: missing {name}" for name in missing]
    problems += [f"{wheel.name}: should not contain {name}" for name in forbidden(names)]
    return problems


def check_sdist(sdist: Path) -> list[str]:
    """Problems with the sdist's file list (names are relative to its top directory)."""
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    missing = [name for name in REQUIRED_IN_SDIST if name not in names]
    problems = [f"{sdist.name}: missing {name}" for name in missing]
    problems += [f"{sdist.name}: should not contain {name}" for name in forbidden(names)]
    if not any(name.startswith(f"{PACKAGE}/") for name in names):
        problems.append(f"{sdist.name}: holds no {PACKAGE}/ sources")
    return problems


def main(argv: list[str]) -> int:
    """Check the one wheel and the one sdist in DIST_DIR; print what is wrong."""
    dist = Path(argv[1])
    source = Path(__file__).resolve().parent.parent
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"expected one wheel and one sdist in {dist}", file=sys.stderr)  # noqa: T201
        return 1
    problems = check_wheel(wheels[0], source) + check_sdist(sdists[0])
    for problem in problems:
        print(problem, file=sys.stderr)  # noqa: T201 - a CI script reports on stderr
    if not problems:
        print(f"dist contents ok: {wheels[0].name}, {sdists[0].name}")  # noqa: T201
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
