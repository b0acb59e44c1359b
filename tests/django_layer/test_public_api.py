"""The package's public names, and no I/O or Django import at `import django_qless`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import django_qless
from django_qless.apps import DjangoQlessConfig
from django_qless.connection import get_client
from django_qless.decorators import qless_job
from django_qless.deploy_marks import mark_deploy
from django_qless.schedules import every

ROOT = Path(__file__).resolve().parents[2]


def test_all_lists_the_public_api() -> None:
    assert django_qless.__all__ == ["__version__", "every", "get_client", "mark_deploy",
                                    "qless_job"]
    assert django_qless.mark_deploy is mark_deploy
    assert django_qless.every is every
    assert django_qless.qless_job is qless_job
    assert django_qless.get_client is get_client
    assert isinstance(django_qless.__version__, str)


def test_unknown_attributes_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        django_qless.nope  # noqa: B018 - the attribute access is the test


def test_import_touches_neither_django_nor_settings() -> None:
    code = (
        "import sys, django_qless\n"
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_decorating_needs_no_settings_and_no_redis() -> None:
    code = (
        "from django_qless import qless_job\n"
        "def job(a: int) -> int:\n"
        "    return a\n"
        "defn = qless_job(queue='q')(job)\n"
        "print(defn.name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "__main__.job"


def test_app_config_is_the_default() -> None:
    from django.apps import apps  # noqa: PLC0415

    config = apps.get_app_config("django_qless")
    assert isinstance(config, DjangoQlessConfig)
    assert config.name == "django_qless"
