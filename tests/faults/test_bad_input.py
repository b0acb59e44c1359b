"""Bad input through the Python API and the management commands: a typed error, nothing written.

Every rejected call is bracketed by a DUMP snapshot of the whole keyspace, which must not
change; a clean call afterwards proves the database still works.
"""

from __future__ import annotations

import datetime
import decimal
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from django_qless.connection import get_client, reset_clients
from django_qless.core import (
    Client,
    ConfigValueError,
    InvalidArgumentError,
    JobDataError,
    PayloadTooLargeError,
    UnknownJobError,
    commands,
)
from django_qless.exceptions import QlessConfigurationError
from django_qless.registry import registry
from tests.conftest import snapshot
from tests.faults.app import qless_jobs
from tests.redis_harness import RedisServer
from tests.tasks.conftest import TASKS

pytestmark = pytest.mark.faults

LIMIT = 2048


@pytest.fixture
def qless(settings: Any, server: RedisServer) -> Iterator[Client]:
    """QLESS on the test's own server with a 2 KiB payload limit; a job already there."""
    settings.QLESS = {"URL": server.url, "MAX_PAYLOAD_BYTES": LIMIT}
    client = get_client()
    client.config.put("heartbeat", 3)
    qless_jobs.work.enqueue(ms=1)
    yield client
    reset_clients()


@pytest.fixture
def unchanged(qless: Client, figures: dict[str, Any]) -> Iterator[Callable[..., Any]]:
    """`unchanged(error, call)`: the call raises `error` and the keyspace stays as it was."""
    raw: redis.Redis = qless.redis
    checked: list[str] = []

    def check(error: type[BaseException], call: Callable[[], object],
              match: str | None = None) -> None:
        before = snapshot(raw)
        with pytest.raises(error, match=match) as caught:
            call()
        assert snapshot(raw) == before, f"{caught.value!r} left writes behind"
        checked.append(type(caught.value).__name__)

    yield check
    figures.update(rejected=len(checked), written=0, errors=" ".join(sorted(set(checked))))


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({1, 2}, "not JSON-serialisable"),
        (b"bytes", "not JSON-serialisable"),
        (datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), "not JSON-serialisable"),
        (decimal.Decimal("1.5"), "not JSON-serialisable"),
        (float("nan"), "not JSON-serialisable"),
        (float("inf"), "not JSON-serialisable"),
        ({1: "int key"}, "keys must be strings"),
    ],
)
def test_non_json_arguments_are_refused_before_redis(
    value: object, match: str, unchanged: Callable[..., Any]
) -> None:
    unchanged(JobDataError, lambda: qless_jobs.work.enqueue(ms=value), match)  # type: ignore[arg-type]


def test_payload_above_the_configured_limit_is_refused(
    qless: Client, unchanged: Callable[..., Any]
) -> None:
    unchanged(PayloadTooLargeError, lambda: qless_jobs.work.enqueue(ms="x" * LIMIT),
              f"the limit is {LIMIT}")
    unchanged(PayloadTooLargeError, lambda: qless.queue("q").put(
        "faults.work", {"blob": "y" * 2 * LIMIT}), f"the limit is {LIMIT}")
    # Just under the limit goes through: the limit is the configured one.
    fits = LIMIT - len('{"args":[],"kwargs":{"ms":""}}')
    jid = qless_jobs.work.enqueue(ms="x" * fits)
    assert qless.get_job(jid) is not None


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.queue("bad queue!"),
        lambda c: c.queue("a/b"),
        lambda c: c.queue("q" * 129),
        lambda c: c.queue(""),
        lambda c: qless_jobs.work.using(queue="has space").enqueue(),
        lambda c: qless_jobs.work.using(jid="bad jid").enqueue(),
        lambda c: c.queue("q").put("", {}),
        lambda c: c.queue("q").put("klass\nwith newline", {}),
        lambda c: c.queue("q").put("faults.work", {}, priority=float("nan")),
        lambda c: c.queue("q").put("faults.work", {}, delay=-1),
        lambda c: c.queue("q").put("faults.work", {}, retries=-1),
        lambda c: c.queue("q").put("faults.work", {}, retries="3"),
        lambda c: c.queue("q").put("faults.work", {}, tags="not-a-list"),
        lambda c: c.queue("q").put("faults.work", {}, depends=["bad jid"]),
        lambda c: c.queue("q").put("faults.work", ["not", "an", "object"]),
        lambda c: c.queue("q").pop(count=0),
    ],
    ids=["space", "slash", "129-chars", "empty", "using-queue", "using-jid", "empty-klass",
         "newline-klass", "nan-priority", "negative-delay", "negative-retries",
         "string-retries", "string-tags", "bad-depends", "array-data", "pop-zero"],
)
def test_bad_names_and_numbers_are_refused(call: Callable[[Client], object], qless: Client,
                                           unchanged: Callable[..., Any]) -> None:
    unchanged(InvalidArgumentError, lambda: call(qless))


@pytest.mark.parametrize(
    ("key", "value"),
    [("heartbeat", "abc"), ("heartbeat", 0), ("heartbeat", -1), ("heartbeat", float("nan")),
     ("grace-period", -5), ("q-heartbeat", "soon"), ("jobs-history-count", 1.5),
     ("q-max-concurrency", -1)],
)
def test_bad_config_values_are_refused(key: str, value: object, qless: Client,
                                       unchanged: Callable[..., Any]) -> None:
    unchanged(ConfigValueError, lambda: qless.config.put(key, value), key)  # type: ignore[arg-type]


def test_unknown_klass_is_a_typed_error(unchanged: Callable[..., Any]) -> None:
    unchanged(UnknownJobError, lambda: registry.get("faults.no_such_job"), "no_such_job")


@pytest.mark.parametrize(
    "qless_setting",
    [{"MAX_PAYLOAD_BYTES": "big"}, {"DEFAULT_QUEUE": "bad queue"}, {"HEARTBEAT": -1},
     {"WORKER": {"POLL_INTERVAL": "often"}}, {"NO_SUCH_KEY": 1}],
    ids=["payload-string", "default-queue", "heartbeat", "poll-interval", "unknown-key"],
)
def test_bad_settings_refuse_the_enqueue(qless_setting: dict[str, Any], qless: Client,
                                         settings: Any, server: RedisServer,
                                         unchanged: Callable[..., Any]) -> None:
    settings.QLESS = {"URL": server.url, **qless_setting}
    unchanged(QlessConfigurationError, lambda: qless_jobs.work.enqueue(ms=1))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["bad queue!"], "invalid queue name"),
        (["q", "--queues", ","], "expected one or more queue names"),
        (["q", "--heartbeat-interval", "abc"], "expected a number of seconds"),
        (["q", "--poll-interval", "0"], "must be > 0"),
        (["q", "--time-limit", "nan"], "must be a finite number"),
        (["q", "--processes", "-2"], "must be >= 1"),
        (["q", "--max-memory", "lots"], "expected an integer"),
    ],
)
def test_bad_worker_command_input_writes_nothing(args: list[str], match: str,
                                                 unchanged: Callable[..., Any]) -> None:
    unchanged(CommandError, lambda: call_command("qless_worker", *args, "--burst"), match)


def test_planted_bad_config_stops_the_worker_before_any_pop(
    qless: Client, unchanged: Callable[..., Any]
) -> None:
    qless.redis.hset("ql:config", "q-heartbeat", "soon")
    unchanged(CommandError, lambda: call_command("qless_worker", "q", "--burst"), "q-heartbeat")


def test_bad_recurring_declaration_writes_nothing(
    qless: Client, settings: Any, server: RedisServer, unchanged: Callable[..., Any]
) -> None:
    settings.QLESS = {"URL": server.url, "RECURRING": {
        "broken": {"JOB": "faults.work", "EVERY": -5},
        "unknown": {"JOB": "faults.no_such_job", "EVERY": 60},
    }}
    unchanged(CommandError, lambda: call_command("qless_recur"), "broken")


def test_the_database_still_works_after_the_refusals(qless: Client) -> None:
    jid = qless_jobs.work.enqueue(ms=2)
    popped = qless.queue("default").pop(count=5)
    assert [job.klass for job in popped] == ["faults.work", "faults.work"]
    assert jid in [job.jid for job in popped]


SURROGATE = "\ud800"
#: The first integer a double (the script's cjson, JavaScript) cannot hold exactly.
UNSAFE = 2**53


@pytest.mark.parametrize(
    "call",
    [
        lambda: qless_jobs.work.enqueue(ms=SURROGATE),  # type: ignore[arg-type]
        lambda: qless_jobs.work.enqueue(ms={SURROGATE: 1}),  # type: ignore[arg-type]
        lambda: qless_jobs.work.using(priority=1).enqueue(ms=["ok", "x" + SURROGATE]),  # type: ignore[arg-type]
        lambda: qless_jobs.work.enqueue(ms=UNSAFE),
        lambda: qless_jobs.work.enqueue(ms=-UNSAFE),
        lambda: qless_jobs.work.using(tags=["t"]).enqueue(ms=[{"id": 2**63}]),  # type: ignore[arg-type]
        lambda: get_client().queue("q").put("faults.work", {"n": 10**30}),
    ],
    ids=["surrogate-arg", "surrogate-key", "surrogate-using", "2**53", "-2**53", "2**63-nested",
         "core-put-10**30"],
)
def test_surrogates_and_unreadable_numbers_in_data_are_refused(
    call: Callable[[], object], unchanged: Callable[..., Any]
) -> None:
    unchanged(JobDataError, call, "lone surrogate|beyond")


@pytest.mark.parametrize(
    "call",
    [
        lambda: qless_jobs.work.using(jid=SURROGATE).enqueue(),
        lambda: qless_jobs.work.using(queue="q" + SURROGATE).enqueue(),
        lambda: qless_jobs.work.using(tags=["t" + SURROGATE]).enqueue(),
        lambda: qless_jobs.work.using(depends=[SURROGATE]).enqueue(),
        lambda: get_client().queue("q").put("faults.work" + SURROGATE, {}),
        lambda: get_client().put(commands.put("w", "q", SURROGATE, "faults.work", "{}")),
        lambda: Client(get_client().redis, worker_name="w" + SURROGATE),
    ],
    ids=["using-jid", "using-queue", "using-tag", "using-depends", "core-klass", "builder-jid",
         "worker-name"],
)
def test_surrogates_in_names_are_refused(
    call: Callable[[], object], unchanged: Callable[..., Any]
) -> None:
    unchanged(InvalidArgumentError, call, "invalid")


@pytest.mark.parametrize(
    "args", [(SURROGATE, 1), (UNSAFE, 1), (1, -(2**64))], ids=["surrogate", "2**53", "-2**64"]
)
def test_the_tasks_backend_refuses_them_too(
    args: tuple[Any, Any], qless: Client, unchanged: Callable[..., Any]
) -> None:
    from django_qless.tasks import TaskArgumentsError  # noqa: PLC0415 - needs TASKS set

    with override_settings(TASKS=TASKS):
        tasks = importlib.import_module("tests.tasks.taskapp.tasks")
        unchanged(TaskArgumentsError, lambda: tasks.add.enqueue(*args), "surrogate|beyond")
