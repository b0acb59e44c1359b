"""`JobDefinition.execute`: the worker's path from a popped qless job to the function call."""

from __future__ import annotations

from typing import Any

import pytest

from django_qless.core import Client, Job
from django_qless.exceptions import BadPayloadError, QlessError
from tests.testapp import qless_jobs
from tests.testapp.qless_jobs import add, echo, explode, send_welcome


def popped(client: Client, queue: str = "default") -> Job:
    """Pop the one job of a queue."""
    [job] = client.queue(queue).pop()
    return job


def test_execute_calls_the_function_with_the_stored_arguments(qless: Client) -> None:
    send_welcome.enqueue(9, template="bye")
    job = popped(qless, "emails")
    assert send_welcome.execute(job) == "bye:9"
    assert qless_jobs.CALLS == [("send_welcome", (9, "bye"))]


def test_takes_job_gets_the_popped_job_first(qless: Client) -> None:
    jid = echo.enqueue([1, 2])
    job = popped(qless)
    assert echo.execute(job) == [1, 2]
    assert qless_jobs.SEEN_JOBS == [job]
    assert qless_jobs.CALLS == [("echo", (jid, [1, 2]))]


def put_raw(client: Client, data: dict[str, Any]) -> Job:
    """Put a job with arbitrary data, as another qless client might, and pop it."""
    client.queue("default").put(add.name, data)
    return popped(client)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"args": "1,2"}, r"data\['args'\] must be a list"),
        ({"args": [], "kwargs": [1]}, r"data\['kwargs'\] must be an object"),
        ({"args": [1, 2], "extra": True}, "unexpected keys in data: extra"),
        ({"args": [1]}, "missing a required argument: 'b'"),
        ({"args": [1, 2, 3]}, "too many positional arguments"),
        ({"kwargs": {"a": 1, "b": 2, "c": 3}}, "unexpected keyword argument 'c'"),
    ],
)
def test_bad_payloads_raise_bad_payload_error(
    qless: Client, data: dict[str, Any], message: str
) -> None:
    job = put_raw(qless, data)
    with pytest.raises(BadPayloadError, match=message) as err:
        add.execute(job)
    assert isinstance(err.value, QlessError)
    assert job.jid in str(err.value)
    assert qless_jobs.CALLS == []


def test_data_that_is_not_a_json_object_is_a_bad_payload(qless: Client) -> None:
    add.enqueue(1, 2)
    job = popped(qless)
    job.raw_data = "[1, 2]"
    with pytest.raises(BadPayloadError, match="not a JSON object"):
        add.execute(job)


def test_missing_args_and_kwargs_default_to_empty(qless: Client) -> None:
    job = put_raw(qless, {"kwargs": {"message": "from kwargs"}})
    with pytest.raises(RuntimeError, match="from kwargs"):
        explode.execute(job)


def test_exceptions_of_the_function_are_not_wrapped(qless: Client) -> None:
    add.enqueue("a", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="can only concatenate str"):
        add.execute(popped(qless))


@pytest.mark.parametrize(
    ("args", "message"),
    [([], "missing a required argument: 'value'"), ([1, 2], "too many positional arguments")],
)
def test_a_job_taking_its_job_is_counted_with_it(
    qless: Client, args: list[Any], message: str
) -> None:
    qless.queue("default").put(echo.name, {"args": args})
    with pytest.raises(BadPayloadError, match=message):
        echo.execute(popped(qless))
    assert qless_jobs.CALLS == []
