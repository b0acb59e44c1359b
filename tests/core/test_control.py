"""Control orders (`core.control`): what is sent, and what a worker takes for one."""

from __future__ import annotations

import json

import pytest

from django_qless.core import Client, control, keys


def test_an_order_round_trips_and_reaches_only_its_channel(client: Client) -> None:
    pubsub = client.redis.pubsub()  # type: ignore[no-untyped-call]
    pubsub.subscribe(keys.worker_control("w-1"))
    assert pubsub.get_message(timeout=5)["type"] == "subscribe"
    try:
        assert control.send(client, "w-2", control.PAUSE, "alice") == 0
        assert control.send(client, "w-1", control.PAUSE, "alice") == 1
        message = pubsub.get_message(timeout=5)
        assert message is not None and message["channel"] in (
            b"ql:django_qless:control:w-1", "ql:django_qless:control:w-1")
        order = control.decode(message["data"])
        assert order is not None and (order.action, order.by) == ("pause", "alice")
        assert abs(order.at - client.now()) < 5
        assert pubsub.get_message(timeout=0.2) is None  # w-2's order went elsewhere
    finally:
        pubsub.close()


@pytest.mark.parametrize("data", [
    "halt", b"\xff", "[]", json.dumps({"jid": "j1", "event": "lock_lost", "worker": "w-1"}),
    json.dumps({"event": "django_qless:control", "action": "restart", "by": "alice"}),
    json.dumps({"event": "django_qless:control", "action": "stop", "by": None}),
    json.dumps({"event": "other", "action": "stop", "by": "alice"}),
])
def test_anything_else_is_not_an_order(data: str | bytes) -> None:
    assert control.decode(data) is None


def test_an_unknown_action_is_refused_before_it_is_sent(client: Client) -> None:
    with pytest.raises(ValueError, match="unknown control action"):
        control.send(client, "w-1", "restart", "alice")
