"""The QLESS connection: routed by queue like `@qless_job`, or chosen by OPTIONS."""

from __future__ import annotations

from typing import Any

import redis
from django.test import override_settings

from django_qless.connection import get_client
from tests.redis_harness import RedisServer


def two_connections(url: str) -> dict[str, Any]:
    """QLESS with queue "other" routed to database 1."""
    return {"CONNECTIONS": {
        "default": {"URL": url},
        "second": {"URL": url[:-1] + "1", "QUEUES": ["other"]},
    }}


def test_a_queue_routed_elsewhere_is_put_and_read_there(
    tasks: Any, settings: Any, redis_server: RedisServer
) -> None:
    settings.QLESS = two_connections(redis_server.url)
    db1 = redis_server.client(db=1, decode_responses=True)
    try:
        enqueued = tasks.shout.enqueue("a")
        assert get_client("second").get_job(enqueued.id) is not None
        assert get_client("default").get_job(enqueued.id) is None
        assert tasks.shout.get_result(enqueued.id).args == ["a"]
    finally:
        db1.flushdb()
        db1.close()


def test_the_connection_option_wins_over_routing(
    tasks: Any, settings: Any, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    settings.QLESS = two_connections(redis_server.url)
    backend_settings = {"BACKEND": "django_qless.tasks.QlessBackend",
                        "QUEUES": ["default", "other"], "OPTIONS": {"CONNECTION": "second"}}
    db1 = redis_server.client(db=1, decode_responses=True)
    try:
        with override_settings(TASKS={**settings.TASKS, "default": backend_settings}):
            enqueued = tasks.add.enqueue(1, 2)
            assert get_client("second").get_job(enqueued.id) is not None
            assert tasks.add.get_result(enqueued.id).args == [1, 2]
        assert redis_client.dbsize() == 0
    finally:
        db1.flushdb()
        db1.close()
