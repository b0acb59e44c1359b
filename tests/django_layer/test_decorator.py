"""@qless_job: bare and with options, the registry, refusals, autodiscovery."""

from __future__ import annotations

import sys
import types
from datetime import timedelta
from typing import Any

import pytest

from django_qless import qless_job
from django_qless.core import Job
from django_qless.definitions import JobDefinition
from django_qless.exceptions import DuplicateJobError, InvalidJobError, UnknownJobError
from django_qless.registry import autodiscover, registry
from django_qless.retry import RetryPolicy
from tests.testapp import qless_jobs

pytestmark = pytest.mark.usefixtures("clean_registry")


def plain(a: int, b: str = "x") -> str:
    """A module-level function the tests decorate by hand."""
    return f"{a}{b}"


def other_plain(a: int) -> int:
    """A second module-level function."""
    return a


def with_job(job: Job, a: int) -> int:
    """A function that takes the job first."""
    return a


async def coroutine_job(a: int) -> int:
    """An async job function."""
    return a * 2


def test_bare_decorator_registers_under_the_dotted_path() -> None:
    defn = qless_job(plain)
    assert isinstance(defn, JobDefinition)
    assert defn.name == f"{__name__}.plain"
    assert defn.func is plain
    assert registry.get(defn.name) is defn
    assert defn.name in registry
    assert (defn.queue, defn.priority, defn.tags, defn.retries, defn.delay) == (
        None, None, (), None, 0.0
    )
    assert (defn.tracked, defn.takes_job, defn.retry_policy, defn.time_limit) == (
        False, False, None, None
    )


def test_options_are_kept_and_normalised() -> None:
    policy = RetryPolicy(backoff=2)
    defn = qless_job(
        queue="emails", priority=5, tags=["a", "b"], retries=2, delay=timedelta(minutes=1),
        depends=["parent-jid"], tracked=True, heartbeat=15, time_limit=60,
        retry_policy=policy, connection="reports", on_commit=False, name="custom.Name",
    )(plain)
    assert defn.name == "custom.Name"
    assert "custom.Name" in registry
    assert f"{__name__}.plain" not in registry
    assert defn.queue == "emails"
    assert defn.priority == 5
    assert defn.tags == ("a", "b")
    assert defn.retries == 2
    assert defn.delay == 60.0
    assert defn.depends == ("parent-jid",)
    assert defn.tracked is True
    assert (defn.heartbeat, defn.time_limit) == (15.0, 60.0)
    assert defn.retry_policy is policy
    assert defn.connection == "reports"
    assert defn.on_commit is False


def test_call_runs_the_function_inline_through_json() -> None:
    defn = qless_job(plain)
    assert defn.call(1, b="y") == "1y"
    assert defn.func(2) == "2x"


def test_definitions_are_frozen() -> None:
    defn = qless_job(plain)
    with pytest.raises(AttributeError):
        defn.queue = "other"  # type: ignore[misc]


def test_using_returns_a_copy_with_overrides() -> None:
    defn = qless_job(queue="a", priority=1, tags=["t"])(plain)
    copy = defn.using(queue="b", tags=["u", "v"], jid="fixed-jid", delay=timedelta(seconds=5))
    assert (copy.queue, copy.priority, copy.tags, copy.jid, copy.delay) == (
        "b", 1, ("u", "v"), "fixed-jid", 5.0
    )
    assert (defn.queue, defn.tags, defn.jid) == ("a", ("t",), None)
    assert registry.get(defn.name) is defn


def test_duplicate_name_is_refused_loudly() -> None:
    qless_job(name="dup.Name")(plain)
    with pytest.raises(DuplicateJobError, match=r"'dup.Name' is already registered .*\.plain"):
        qless_job(name="dup.Name")(other_plain)
    assert registry.get("dup.Name").func is plain


def test_reregistering_the_same_function_replaces_it() -> None:
    first = qless_job(plain)
    second = qless_job(queue="q2")(plain)
    assert registry.get(first.name) is second


def test_rerunning_a_module_is_not_a_duplicate() -> None:
    first = qless_job(plain)
    # What importlib.reload produces: a new function object from the same source line.
    again = types.FunctionType(plain.__code__, plain.__globals__, "plain")
    second = qless_job(again)
    assert second.func is not first.func
    assert registry.get(first.name) is second


def test_nested_functions_are_refused() -> None:
    def inner() -> None:
        pass

    with pytest.raises(InvalidJobError, match="nested function .*inner"):
        qless_job(inner)
    assert not [d for d in registry.all() if "inner" in d.name]


def test_lambdas_are_refused() -> None:
    with pytest.raises(InvalidJobError, match="lambda"):
        qless_job(lambda: None)


@pytest.mark.parametrize("thing", [print, str.upper, 42, RetryPolicy])
def test_non_functions_are_refused(thing: Any) -> None:
    with pytest.raises(InvalidJobError):
        qless_job(thing)


def test_async_functions_are_accepted_and_called_to_completion() -> None:
    defn = qless_job(coroutine_job)
    assert defn.name == f"{__name__}.coroutine_job"
    assert defn.call(21) == 42


def test_takes_job_needs_a_job_parameter_first() -> None:
    assert qless_job(takes_job=True)(with_job).takes_job is True
    with pytest.raises(InvalidJobError, match="first parameter named 'job'"):
        qless_job(takes_job=True)(plain)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"queue": "has space"}, "queue name"),
        ({"priority": "high"}, "priority must be a number"),
        ({"priority": float("inf")}, "priority must be finite"),
        ({"tags": "single"}, "not a string"),
        ({"retries": -1}, "retries must be >= 0"),
        ({"delay": -5}, "delay must be >= 0"),
        ({"depends": "jid"}, "not a string"),
        ({"heartbeat": 0}, "heartbeat must be > 0"),
        ({"time_limit": -1}, "time_limit must be > 0"),
        ({"tracked": "yes"}, "tracked must be True or False"),
        ({"retry_policy": 3}, "RetryPolicy"),
        ({"on_commit": 1}, "on_commit"),
        ({"name": ""}, "job name"),
        ({"queues": ["a"]}, "queues"),
    ],
)
def test_bad_options_are_refused_at_decoration(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidJobError, match=message):
        qless_job(**options)(plain)
    assert f"{__name__}.plain" not in registry


def test_bad_using_overrides_are_refused() -> None:
    defn = qless_job(plain)
    with pytest.raises(InvalidJobError, match="jid"):
        defn.using(jid="has space")
    with pytest.raises(InvalidJobError, match="priority"):
        defn.using(priority=float("nan"))


def test_mixing_bare_and_options_is_refused() -> None:
    with pytest.raises(InvalidJobError, match="not both"):
        qless_job(plain, queue="x")  # type: ignore[call-overload]


def test_unknown_klass_raises_unknown_job_error() -> None:
    with pytest.raises(UnknownJobError, match="no job registered under 'nope.Nope'"):
        registry.get("nope.Nope")
    assert registry.lookup("nope.Nope") is None


def test_registry_lists_sorted() -> None:
    names = [d.name for d in registry.all()]
    assert names == sorted(names)
    assert len(registry) == len(names)


def test_testapp_jobs_were_autodiscovered_at_startup() -> None:
    assert "tests.testapp.qless_jobs.add" in registry
    assert "tests.testapp.qless_jobs.send_welcome" in registry
    assert "testapp.echo" in registry
    welcome = registry.get("tests.testapp.qless_jobs.send_welcome")
    assert (welcome.queue, welcome.priority, welcome.tags, welcome.retries) == (
        "emails", 10, ("mail", "welcome"), 3
    )


def test_autodiscover_imports_qless_jobs_of_installed_apps() -> None:
    for name in [d.name for d in registry.all() if d.func.__module__ == qless_jobs.__name__]:
        registry.unregister(name)
    del sys.modules[qless_jobs.__name__]
    try:
        assert "tests.testapp.qless_jobs.add" not in registry
        autodiscover()
        assert "tests.testapp.qless_jobs.add" in registry
        assert qless_jobs.__name__ in sys.modules
    finally:
        sys.modules[qless_jobs.__name__] = qless_jobs
