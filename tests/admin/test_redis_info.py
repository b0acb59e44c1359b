"""The config page shows what the Redis server says about itself."""

from __future__ import annotations

from typing import Any

import redis
from django.test import Client as HttpClient

from django_qless.core import Client
from django_qless.core.server_info import read_server_info
from tests.admin.conftest import url


def test_the_reading_matches_info(qless: Client) -> None:
    qless.queue("jobs").put("K", {})
    found = read_server_info(qless)
    assert found is not None
    info: dict[str, Any] = qless.redis.info()
    assert found.version == info["redis_version"] and found.keys >= 2
    assert found.eviction_policy == info["maxmemory_policy"]
    assert found.used_memory > 0 and found.clients >= 1


def test_the_config_page_shows_the_server_and_warns_about_risks(
    qless: Client, viewer: HttpClient,
) -> None:
    qless.redis.config_set("maxmemory-policy", "allkeys-lru")
    try:
        page = viewer.get(url("config")).content.decode()
    finally:
        qless.redis.config_set("maxmemory-policy", "noeviction")
    version = qless.redis.info()["redis_version"]
    assert "Redis server" in page and f"<td>{version} " in page
    assert "Redis may delete jobs when full" in page
    assert "no append-only file" in page  # the test server runs without an AOF


def test_a_redis_that_forbids_info_gives_no_reading(qless: Client, monkeypatch: Any) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise redis.ResponseError("unknown command 'INFO'")

    monkeypatch.setattr(qless.redis, "info", refuse)
    assert read_server_info(qless) is None
