"""sentry_sdk is imported only by the integration module, which a settings module can import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Makes `import sentry_sdk` fail as if it were not installed, then uses django_qless.
WITHOUT_SENTRY = """
import sys

class NoSentry:
    def find_spec(self, name, path=None, target=None):
        if name == "sentry_sdk" or name.startswith("sentry_sdk."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoSentry())
import django
django.setup()
import django_qless, django_qless.hooks, django_qless.integrations, django_qless.tasks
from django_qless.worker import Worker
from django_qless.management.commands import qless_worker
from django_qless.admin import views
from tests.testapp.qless_jobs import add
add.using(on_commit=False)
print("modules:", sorted(m for m in sys.modules if m.startswith("sentry")))
"""

#: What a settings module does: import the integration before Django is set up.
IN_SETTINGS = """
import sys
from django_qless.integrations.sentry import QlessIntegration
from django.conf import settings
print("identifier:", QlessIntegration.identifier, "configured:", settings.configured)
"""


def run(code: str, env: dict[str, str]) -> str:
    """Run `code` in a fresh interpreter at the project's root; its output."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_django_qless_works_without_sentry_sdk() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    assert run(WITHOUT_SENTRY, env).strip() == "modules: []"


def test_the_integration_imports_in_a_settings_module() -> None:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    assert run(IN_SETTINGS, env).strip() == "identifier: qless configured: False"


def test_a_sentry_sdk_it_cannot_drive_is_refused_with_the_supported_range() -> None:
    from django_qless.integrations.sentry.supported import check_version

    check_version("2.15.0")
    check_version("2.99.1")
    with pytest.raises(ImportError, match=r"supports sentry-sdk 2\.x .* sentry-sdk 3\.0\.0 is"):
        check_version("3.0.0")
