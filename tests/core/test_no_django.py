"""django_qless.core must import and work with only redis and the standard library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK_DJANGO = """
import sys

class BlockDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django."):
            raise ImportError("django is blocked in this test")
        return None

sys.meta_path.insert(0, BlockDjango())
import django_qless.core as core
from django_qless.core import client, config, events, job, queue, records, recurring
from django_qless.core import script, templates, validation, workers
assert core.script_text().startswith("--"), "packaged script not readable"
print(sorted(name for name in sys.modules if name == "django" or name.startswith("django.")))
"""


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a fresh interpreter from the repository root."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_core_imports_with_django_blocked() -> None:
    result = run_python("-c", BLOCK_DJANGO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_importtime_lists_no_django_module() -> None:
    result = run_python("-X", "importtime", "-c", "import django_qless.core")
    assert result.returncode == 0, result.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert "django_qless.core.client" in imported
    assert not [name for name in imported if name.split(".")[0] == "django"]
