"""Minimal Django settings for the benchmark: no database, QLESS on $BENCH_REDIS_URL."""

from __future__ import annotations

import os

SECRET_KEY = "django_qless-bench-only"  # noqa: S105 - throwaway benchmark settings
DEBUG = False
USE_TZ = True
DATABASES: dict[str, dict[str, str]] = {}
INSTALLED_APPS = ["django_qless", "qless_bench"]
QLESS = {"URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")}

# bench/integrations.py: Sentry or OpenTelemetry, set up where a project sets them up.
if os.environ.get("BENCH_INTEGRATION"):
    import bench_integrations

    bench_integrations.setup()
