"""`defn.result(jid)` in immediate mode, `store_result` and the results settings,
async job functions outside a worker, and `aenqueue`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from django_qless.conf import get_settings, problems
from django_qless.core import Client
from django_qless.decorators import qless_job
from django_qless.exceptions import InvalidJobError
from django_qless.results import (
    ImmediateResults,
    JobResult,
    JobStatus,
    ResultDoesNotExist,
    ResultNotStorableError,
    immediate_results,
)

CALLS: list[int] = []


@qless_job(name="layer.results.double", store_result=True)
def double(value: int) -> int:
    """Doubles a number; keeps the value."""
    CALLS.append(value)
    return value * 2


@qless_job(name="layer.results.plain")
def plain() -> str:
    """Keeps its value only with QLESS['STORE_RESULTS']."""
    return "done"


@qless_job(name="layer.results.fails")
def fails() -> None:
    """Always raises."""
    raise LookupError("nothing here")


@qless_job(name="layer.results.async_triple", store_result=True)
async def async_triple(value: int) -> int:
    """An async job function."""
    await asyncio.sleep(0)
    return value * 3


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CALLS.clear()
    immediate_results.clear()


def immediate_on(settings: Any, **extra: Any) -> None:
    """IMMEDIATE on, on a URL nobody listens on (any Redis use would fail the test)."""
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0", "IMMEDIATE": True, **extra}


def test_an_immediate_job_s_result_reads_back(settings: Any, keyspace: Any) -> None:
    immediate_on(settings)
    jid = double.enqueue(4)
    assert double.result(jid) == JobResult(jid, JobStatus.SUCCESSFUL, 8)
    assert keyspace() == {}


def test_an_immediate_failure_is_kept_with_its_error(settings: Any) -> None:
    immediate_on(settings)
    with pytest.raises(LookupError):
        fails.using(jid="failing-jid").enqueue()
    result = fails.result("failing-jid")
    assert result.status is JobStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "builtins.LookupError"
    assert "nothing here" in error.traceback


def test_immediate_mode_keeps_values_as_the_worker_does(settings: Any) -> None:
    immediate_on(settings)
    assert plain.result(plain.enqueue()).value is None
    immediate_on(settings, STORE_RESULTS=True)
    assert plain.result(plain.enqueue()).value == "done"
    immediate_on(settings, STORE_RESULTS=True, RESULT_MAX_BYTES=3)
    with pytest.raises(ResultNotStorableError, match="RESULT_MAX_BYTES"):
        plain.enqueue()


def test_an_unknown_jid_raises_in_immediate_mode(settings: Any) -> None:
    immediate_on(settings)
    with pytest.raises(ResultDoesNotExist):
        double.result("never-enqueued")
    jid = plain.enqueue()
    with pytest.raises(ResultDoesNotExist):
        double.result(jid)  # another job's jid


def test_the_immediate_store_is_bounded() -> None:
    store = ImmediateResults(size=2)
    for n in range(3):
        store.keep("k", JobResult(f"j{n}", JobStatus.SUCCESSFUL, n))
    assert store.get("j0") is None
    assert store.get("j2") == ("k", JobResult("j2", JobStatus.SUCCESSFUL, 2))


def test_a_put_job_is_ready_until_a_worker_runs_it(qless: Client) -> None:
    jid = double.enqueue(1)
    assert double.result(jid) == JobResult(jid, JobStatus.READY)


def test_async_functions_run_through_call_and_immediate_mode(settings: Any) -> None:
    assert async_triple.call(2) == 6
    immediate_on(settings)
    assert async_triple.result(async_triple.enqueue(5)).value == 15


def test_aenqueue_puts_without_blocking_the_loop(qless: Client) -> None:
    jid = asyncio.run(double.aenqueue(3))
    job = qless.get_job(jid)
    assert job is not None and job.klass == "layer.results.double"
    assert job.data == {"args": [3], "kwargs": {}}


def test_store_result_must_be_a_boolean() -> None:
    with pytest.raises(InvalidJobError, match="store_result"):
        qless_job(name="layer.results.bad", store_result="yes")(plain.func)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("extra", "key"),
    [({"STORE_RESULTS": "yes"}, "STORE_RESULTS"), ({"RESULT_MAX_BYTES": 0}, "RESULT_MAX_BYTES")],
)
def test_results_settings_are_checked(settings: Any, extra: dict[str, Any], key: str) -> None:
    settings.QLESS = {**settings.QLESS, **extra}
    assert any(key in problem.key for problem in problems())


def test_results_settings_defaults(settings: Any) -> None:
    assert (get_settings().store_results, get_settings().result_max_bytes) == (False, 65536)
