"""The checks CI relies on: fresh Lua build, luacheck, ruff and mypy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "django_qless" / "core" / "qless.lua"
LIBRARY = ROOT / "django_qless" / "core" / "qless_library.lua"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a tool from the repository root and capture its output."""
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_shipped_lua_build_is_fresh() -> None:
    result = run(sys.executable, "lua/build.py", "--check")
    assert result.returncode == 0, result.stderr


def test_shipped_script_carries_a_source_marker_per_module() -> None:
    sys.path.insert(0, str(ROOT / "lua"))
    try:
        import build  # noqa: PLC0415 - lua/ is not a package
    finally:
        sys.path.pop(0)
    for built in (BUILT, LIBRARY):
        text = built.read_text(encoding="utf-8")
        for name in build.ORDER:
            assert f"-- source: {name}\n" in text


@pytest.mark.skipif(shutil.which("luacheck") is None, reason="luacheck (Debian lua-check) missing")
def test_luacheck_passes_on_the_built_script_and_library() -> None:
    result = run("luacheck", "--config", "lua/.luacheckrc", str(BUILT), str(LIBRARY))
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr
