"""`.enqueue()` writes real qless jobs; `.using()` overrides; caller jids; JSON validation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from django_qless import qless_job
from django_qless.connection import get_client
from django_qless.core import Client, Job
from django_qless.exceptions import (
    InvalidArgumentError,
    JobDataError,
    PayloadTooLargeError,
    QlessConfigurationError,
)
from tests.testapp.qless_jobs import add, echo, send_welcome

pytestmark = pytest.mark.usefixtures("clean_registry")


def stored(client: Client, jid: str) -> Job:
    """The job as qless has it."""
    job = client.get_job(jid)
    assert job is not None, f"job {jid} is not in Redis"
    return job


def test_enqueue_writes_a_job_with_the_definition_defaults(qless: Client) -> None:
    jid = send_welcome.enqueue(42, template="hello")
    assert re.fullmatch(r"[0-9a-f]{32}", jid)
    job = stored(qless, jid)
    assert job.klass == "tests.testapp.qless_jobs.send_welcome"
    assert job.queue_name == "emails"
    assert job.state == "waiting"
    assert job.priority == 10
    assert job.tags == ("mail", "welcome")
    assert job.retries == 3
    assert job.data == {"args": [42], "kwargs": {"template": "hello"}}
    assert job.tracked is False


def test_defaults_come_from_qless_and_the_default_queue(qless: Client) -> None:
    job = stored(qless, add.enqueue(1, 2))
    assert (job.queue_name, job.priority, job.tags, job.retries) == ("default", 0, (), 5)


def test_default_queue_setting_is_used(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": qless_url, "DEFAULT_QUEUE": "main"}
    assert stored(get_client(), add.enqueue(1, 2)).queue_name == "main"


def test_using_overrides_every_put_option(qless: Client) -> None:
    parent = add.enqueue(0, 0)
    jid = send_welcome.using(
        queue="urgent", priority=-3, tags=["x"], retries=0, delay=30, depends=[parent],
        tracked=True,
    ).enqueue(7)
    job = stored(qless, jid)
    assert (job.queue_name, job.priority, job.tags, job.retries) == ("urgent", -3, ("x",), 0)
    assert job.tracked is True
    assert job.state == "depends"
    assert job.dependencies == (parent,)
    assert send_welcome.queue == "emails"  # the definition itself is unchanged


def test_delay_schedules_the_job(qless: Client) -> None:
    jid = add.using(delay=60).enqueue(1, 2)
    assert stored(qless, jid).state == "scheduled"
    assert qless.queue("default").jobs("scheduled") == [jid]


def test_tracked_definition_tracks(qless: Client) -> None:
    tracked_add = add.using(tracked=True)
    jid = tracked_add.enqueue(1, 1)
    assert [job.jid for job in qless.tracked().jobs] == [jid]


def test_caller_chosen_jid(qless: Client) -> None:
    jid = add.using(jid="order-17-invoice").enqueue(1, 2)
    assert jid == "order-17-invoice"
    assert stored(qless, jid).data == {"args": [1, 2], "kwargs": {}}


def test_reput_of_an_existing_jid_replaces_and_moves_it(qless: Client) -> None:
    add.using(jid="same-jid").enqueue(1, 2)
    send_welcome.using(jid="same-jid", queue="elsewhere").enqueue(3)
    job = stored(qless, "same-jid")
    assert job.klass == "tests.testapp.qless_jobs.send_welcome"
    assert job.queue_name == "elsewhere"
    assert job.data == {"args": [3], "kwargs": {}}
    assert qless.queue("default").length() == 0
    assert qless.queue("elsewhere").length() == 1


def test_takes_job_parameter_is_not_part_of_enqueue(qless: Client) -> None:
    jid = echo.enqueue({"a": [1, 2]})
    job = stored(qless, jid)
    assert job.klass == "testapp.echo"
    assert job.data == {"args": [{"a": [1, 2]}], "kwargs": {}}


def test_tuples_become_lists(qless: Client) -> None:
    jid = echo.enqueue((1, (2, 3)))
    assert stored(qless, jid).raw_data == '{"args":[[1,[2,3]]],"kwargs":{}}'


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (float("nan"), JobDataError, "not JSON-serialisable"),
        (float("inf"), JobDataError, "not JSON-serialisable"),
        ({1, 2}, JobDataError, "not JSON-serialisable"),
        (b"bytes", JobDataError, "not JSON-serialisable"),
        ({1: "int key"}, JobDataError, "keys must be strings"),
        (object(), JobDataError, "not JSON-serialisable"),
    ],
)
def test_non_json_arguments_fail_in_the_caller_and_write_nothing(
    value: Any, error: type[Exception], message: str, keyspace: Any
) -> None:
    before = keyspace()
    with pytest.raises(error, match=message):
        echo.enqueue(value)
    assert keyspace() == before


def test_payload_limit_is_enforced_before_writing(
    settings: Any, qless_url: str, keyspace: Any
) -> None:
    settings.QLESS = {"URL": qless_url, "MAX_PAYLOAD_BYTES": 100}
    before = keyspace()
    with pytest.raises(PayloadTooLargeError, match="limit is 100"):
        echo.enqueue("x" * 200)
    assert keyspace() == before
    assert echo.enqueue("x" * 10)


def test_arguments_not_matching_the_signature_fail_in_the_caller(keyspace: Any) -> None:
    before = keyspace()
    with pytest.raises(TypeError, match=r"add.enqueue\(\): missing a required argument: 'b'"):
        add.enqueue(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        add.enqueue(1, 2, c=3)  # type: ignore[call-arg]
    assert keyspace() == before


def test_bad_jid_is_refused_before_writing(keyspace: Any) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError, match="jid"):
        add.using(jid="a b").enqueue(1, 2)
    assert keyspace() == before


def test_unknown_connection_fails_in_the_caller(keyspace: Any) -> None:
    before = keyspace()
    with pytest.raises(QlessConfigurationError, match="connection 'missing'"):
        add.using(connection="missing").enqueue(1, 2)
    assert keyspace() == before


def test_queues_are_routed_to_their_connection(
    settings: Any, qless_url: str, redis_client: Any, db1: Any
) -> None:
    settings.QLESS = {
        "URL": qless_url,
        "CONNECTIONS": {"reports": {"URL": qless_url[:-1] + "1", "QUEUES": ["reports"]}},
    }
    jid = add.using(queue="reports").enqueue(1, 2)
    assert json.loads(db1.hget(f"ql:j:{jid}", "data")) == {"args": [1, 2], "kwargs": {}}
    assert not redis_client.exists(f"ql:j:{jid}")
    other = add.enqueue(3, 4)
    assert redis_client.exists(f"ql:j:{other}")
    assert not db1.exists(f"ql:j:{other}")


def test_explicit_connection_wins_over_routing(
    settings: Any, qless_url: str, redis_client: Any, db1: Any
) -> None:
    settings.QLESS = {"URL": qless_url, "CONNECTIONS": {"reports": {"URL": qless_url[:-1] + "1"}}}
    jid = add.using(connection="reports").enqueue(1, 2)
    assert db1.exists(f"ql:j:{jid}")
    assert not redis_client.exists(f"ql:j:{jid}")


def test_jobs_declared_with_a_connection(
    settings: Any, qless_url: str, db1: Any
) -> None:
    settings.QLESS = {"URL": qless_url, "CONNECTIONS": {"reports": {"URL": qless_url[:-1] + "1"}}}

    defn = qless_job(connection="reports", queue="r")(report)
    jid = defn.enqueue(5)
    assert db1.hget(f"ql:j:{jid}", "queue") == "r"


def report(n: int) -> int:
    """A job pinned to the reports connection."""
    return n
