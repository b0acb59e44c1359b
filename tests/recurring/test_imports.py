"""Where the recurring names live: schedule types Django-free, sync entry points imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import django_qless
import django_qless.recurring
from django_qless import schedules

ROOT = Path(__file__).resolve().parents[2]

SETTINGS_MODULE = """
import django
django.setup()
from django_qless.recurring.declarations import collect
found = collect()
assert not found.problems, found.problems
print(sorted((d.name, d.every.interval) for d in found.items if "vacuum" in d.name))
"""

BLOCK_DJANGO = """
import sys

class BlockDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django."):
            raise ImportError("django is blocked in this test")
        return None

sys.meta_path.insert(0, BlockDjango())
from django_qless import every
from django_qless.schedules import Schedule, schedule_jid
print(Schedule(every(hours=1)).every.interval, schedule_jid("x"))
"""


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter from the repository root (no settings unless given)."""
    base = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
        env={**base, "PYTHONPATH": str(ROOT), **env},
    )


def test_schedule_types_are_one_set_of_names() -> None:
    assert django_qless.every is schedules.every
    for name in ("every", "Every", "Schedule", "schedule_jid", "MANAGED_TAG", "JID_PREFIX",
                 "DEFAULT_BACKLOG"):
        assert getattr(django_qless.recurring, name) is getattr(schedules, name)


def test_recurring_package_has_no_module_getattr() -> None:
    assert "__getattr__" not in vars(django_qless.recurring)
    assert django_qless.recurring.sync_schedules.__module__ == "django_qless.recurring.sync"


def test_importing_the_package_reads_no_setting_and_loads_no_app() -> None:
    result = run_python(
        "import django_qless.recurring\n"
        "from django.apps import apps\n"
        "from django.conf import settings\n"
        "print(settings.configured, apps.ready)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False False"


def test_settings_module_may_import_the_schedule_types() -> None:
    result = run_python(SETTINGS_MODULE, DJANGO_SETTINGS_MODULE="tests.recurapp.every_settings")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[('daily-vacuum', 86400), ('hourly-vacuum', 3600)]"


def test_schedule_types_import_without_django() -> None:
    result = run_python(BLOCK_DJANGO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"3600 {schedules.schedule_jid('x')}"
