"""The test settings on PostgreSQL: both aliases on the cluster named by $QLESS_TEST_POSTGRES.

$QLESS_TEST_POSTGRES is `host:port` of a cluster whose superuser `postgres` is trusted
(the suite's own, `tests.postgres_harness`); pytest-django creates `test_qless` and
`test_qless_other` there and drops them afterwards.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403

if "QLESS_TEST_POSTGRES" not in os.environ:
    raise RuntimeError("tests.postgres_settings needs QLESS_TEST_POSTGRES=host:port of a "
                       "cluster; `python -m pytest tests/postgres` starts one and sets it")
HOST, _, PORT = os.environ["QLESS_TEST_POSTGRES"].rpartition(":")


def _database(name: str) -> dict[str, object]:
    """One alias on the suite's cluster."""
    return {"ENGINE": "django.db.backends.postgresql", "NAME": name, "USER": "postgres",
            "HOST": HOST, "PORT": PORT}


DATABASES = {"default": _database("qless"), "other": _database("qless_other")}
