"""Recurring jobs: create, read, spawn, update, tag, cancel."""

from __future__ import annotations

import json

import pytest

from django_qless.core import Client, JobNotFoundError, QlessError, commands
from django_qless.core.recurring import Template
from tests.support import FakeClock


def test_recur_and_read_back(client: Client) -> None:
    client.queue("q").recur(
        "pkg.Report", {"kind": "daily"}, 86400, jid="report", priority=3, tags=["r"], backlog=2
    )
    recurring = client.recurring("report")
    assert recurring is not None
    assert (recurring.klass, recurring.queue_name, recurring.interval) == ("pkg.Report", "q", 86400)
    assert (recurring.priority, recurring.tags, recurring.backlog) == (3, ("r",), 2)
    assert recurring.data == {"kind": "daily"}
    assert recurring.retries == 5  # like put's default, not the script's 0
    assert recurring.count == 0


def test_recurring_unknown_is_none(client: Client) -> None:
    assert client.recurring("missing") is None


def test_offset_delays_the_first_spawn(client: Client, clock: FakeClock) -> None:
    client.queue("q").recur("k", {}, 60, jid="r", offset=30)
    assert client.queue("q").pop() == []
    clock.advance(30)
    assert [job.jid for job in client.queue("q").pop()] == ["r-1"]
    assert client.recurring("r").count == 1  # type: ignore[union-attr]


def test_spawned_jobs_copy_the_template(client: Client, clock: FakeClock) -> None:
    client.queue("q").recur("k", {"a": 1}, 60, jid="r", priority=4, tags=["x"], retries=2)
    (job,) = client.queue("q").pop()
    assert (job.klass, job.data, job.priority, job.tags, job.retries) == (
        "k", {"a": 1}, 4, ("x",), 2
    )
    assert job.spawned_from_jid == "r"


def test_backlog_limits_catch_up(client: Client, clock: FakeClock) -> None:
    client.queue("q").recur("k", {}, 1, jid="r", backlog=2)
    client.queue("q").pop()  # r-1
    clock.advance(60)
    spawned = client.queue("q").pop(100)
    assert 1 <= len(spawned) <= 3


def test_update_fields(client: Client, clock: FakeClock) -> None:
    client.queue("q").recur("k", {"v": 1}, 60, jid="r")
    recurring = client.recurring("r")
    assert recurring is not None
    assert recurring.data == {"v": 1}
    recurring.update(
        priority=7, interval=120, retries=1, data={"v": 2}, klass="k2", queue="q2", backlog=4
    )
    assert (recurring.priority, recurring.interval, recurring.retries) == (7, 120, 1)
    assert (recurring.klass, recurring.queue_name, recurring.backlog) == ("k2", "q2", 4)
    assert recurring.data == {"v": 2}
    fresh = client.recurring("r")
    assert fresh is not None and fresh.queue_name == "q2"
    assert client.queue("q").jobs("recurring") == []
    assert client.queue("q2").jobs("recurring") == ["r"]


def test_update_of_deleted_template_raises(client: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r")
    recurring = client.recurring("r")
    assert recurring is not None
    recurring.cancel()
    with pytest.raises(JobNotFoundError):
        recurring.update(priority=1)


def test_tag_and_untag(client: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r", tags=["a"])
    recurring = client.recurring("r")
    assert recurring is not None
    assert recurring.tag("b") == ("a", "b")
    assert recurring.untag("a") == ("b",)
    assert client.recurring("r").tags == ("b",)  # type: ignore[union-attr]


def test_cancel_keeps_spawned_jobs(client: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r")
    (spawned,) = client.queue("q").peek()
    client.recurring("r").cancel()  # type: ignore[union-attr]
    assert client.recurring("r") is None
    assert client.get_job(spawned.jid) is not None


def test_recur_again_replaces_the_template(client: Client) -> None:
    client.queue("q").recur("k", {"v": 1}, 60, jid="r")
    client.queue("q").recur("k", {"v": 2}, 30, jid="r")
    recurring = client.recurring("r")
    assert recurring is not None
    assert (recurring.data, recurring.interval) == ({"v": 2}, 30)
    assert client.queue("q").counts().recurring == 1


def test_template_record_from_a_recur_get_object() -> None:
    obj = {"jid": "r", "klass": "k", "queue": "q", "priority": "2.5", "interval": 60,
           "retries": "3", "backlog": None, "data": {"a": 1}, "tags": {}, "count": 4}
    template = Template.from_json(obj, 120)
    assert template == Template(jid="r", klass="k", queue="q", priority=2.5, interval=60,
                                retries=3, backlog=0, data='{"a": 1}', tags=(), count=4,
                                next_run=120.0)
    assert Template.from_json(obj).next_run is None


def test_malformed_template_is_a_qless_error() -> None:
    with pytest.raises(QlessError, match="'r' is malformed"):
        Template.from_json({"jid": "r", "interval": "soon"})


def test_recurring_job_reads_its_record(client: Client) -> None:
    client.queue("q").recur("k", {"v": 1}, 60, jid="r", tags=["a"])
    recurring = client.recurring("r")
    assert recurring is not None
    assert recurring.template == Template.from_json(
        json.loads(client.run(commands.recur_get("r")))
    )
    assert recurring.raw_data == recurring.template.data == '{"v":1}'
