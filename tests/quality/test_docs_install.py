"""The install instructions hold: django_qless installs from a checkout, and migrate
creates the tables the pages say it does."""

from __future__ import annotations

import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
#: `pip install django-qless` (extras and quotes allowed): a lookup on the package index,
#: where the distribution is not published. A direct reference (`django-qless @ file:...`)
#: names a checkout and is fine.
FROM_THE_INDEX = re.compile(
    r"pip install\s+(?:-\S+\s+)*(['\"]?)django-qless(?:\[[^\]]*\])?\1(?=$|[\s`)|;,])(?!\s*@)",
    flags=re.M,
)


def test_no_page_or_message_installs_django_qless_from_the_package_index() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md")),
             *sorted((ROOT / "django_qless").rglob("*.py"))]
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}" for path in texts
             for match in FROM_THE_INDEX.finditer(path.read_text(encoding="utf-8"))]
    assert not found, f"install from a checkout instead (docs/pages/install.md): {found}"


def test_the_pattern_tells_an_index_lookup_from_a_checkout() -> None:
    assert FROM_THE_INDEX.search('`pip install "django-qless[tasks]"`')
    assert FROM_THE_INDEX.search("| `pip install django-qless` |")
    assert not FROM_THE_INDEX.search('`pip install "django-qless[tasks] @ file:///src/dq"`')
    assert not FROM_THE_INDEX.search('`pip install "/path/to/django_qless[tasks]"`')


def test_install_md_names_every_table_migrate_creates() -> None:
    text = (ROOT / "docs" / "pages" / "install.md").read_text(encoding="utf-8")
    tables = [model._meta.db_table for model in apps.get_app_config("django_qless").get_models()
              if model._meta.managed]
    assert tables, "django_qless's migrations create a table (the outbox)"
    assert not [table for table in tables if f"`{table}`" not in text]
    assert "no tables" not in text and "no table is created" not in text
