"""Bad input is refused in Python with a typed error, and nothing is written to Redis."""

from __future__ import annotations

import datetime
import decimal
import enum
import functools
import inspect
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from django_qless.core import (
    Client,
    ConfigValueError,
    InvalidArgumentError,
    JobDataError,
    PayloadTooLargeError,
    QlessError,
    commands,
)
from django_qless.core import validation as check
from tests.support import nested

BAD_DATA: list[Any] = [
    {"when": datetime.datetime(2024, 1, 1)},
    {"blob": b"bytes"},
    {"items": {1, 2}},
    {"price": decimal.Decimal("1.10")},
    {"x": math.nan},
    {"x": math.inf},
    {"nested": [{"deep": -math.inf}]},
    {1: "int key"},
    {"inner": {None: "none key"}},
    ["not", "an", "object"],
    "a string",
    None,
    {"obj": object()},
]


@pytest.fixture
def seeded(client: Client) -> Client:
    """A client whose database already holds one job, so 'unchanged' means something."""
    client.queue("q").put("k", {"a": 1}, jid="existing")
    return client


@pytest.mark.parametrize("data", BAD_DATA, ids=lambda d: type(d).__name__ + ":" + repr(d)[:30])
def test_put_refuses_non_json_data(seeded: Client, keyspace: Callable[[], Any], data: Any) -> None:
    before = keyspace()
    with pytest.raises(JobDataError) as info:
        seeded.queue("q").put("k", data)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, QlessError)
    assert keyspace() == before


def test_oversize_payload_refused_exactly_at_the_limit(
    make_client: Callable[..., Client], keyspace: Callable[[], Any]
) -> None:
    client = make_client(max_payload_bytes=100)
    fits = {"s": "x" * (100 - len('{"s":""}'))}
    client.queue("q").put("k", fits, jid="fits")
    before = keyspace()
    with pytest.raises(PayloadTooLargeError) as info:
        client.queue("q").put("k", {"s": "x" * (100 - len('{"s":""}') + 1)})
    assert isinstance(info.value, InvalidArgumentError)
    assert isinstance(info.value, ValueError)
    assert keyspace() == before


def test_payload_limit_counts_utf8_bytes(make_client: Callable[..., Client]) -> None:
    client = make_client(max_payload_bytes=20)
    with pytest.raises(PayloadTooLargeError):
        client.queue("q").put("k", {"s": "é" * 7})  # 14 characters of data, 21 bytes in total


def test_default_payload_limit_is_one_megabyte(seeded: Client, keyspace: Callable[[], Any]) -> None:
    overhead = len('{"s":""}')
    jid = seeded.queue("q").put("k", {"s": "x" * (1_048_576 - overhead)})
    assert len(seeded.get_job(jid).raw_data) == 1_048_576  # type: ignore[union-attr]
    before = keyspace()
    with pytest.raises(PayloadTooLargeError):
        seeded.queue("q").put("k", {"s": "x" * (1_048_576 - overhead + 1)})
    assert keyspace() == before


def test_complete_heartbeat_and_fail_refuse_bad_data(
    client: Client, keyspace: Callable[[], Any]
) -> None:
    client.queue("q").put("k", {}, jid="j")
    (job,) = client.queue("q").pop()
    before = keyspace()
    with pytest.raises(JobDataError):
        job.complete({"x": math.nan})
    with pytest.raises(JobDataError):
        job.heartbeat({"x": {1, 2}})
    with pytest.raises(JobDataError):
        job.fail("group", "message", {"x": b"1"})
    with pytest.raises(JobDataError):
        job.log("note", {"t": datetime.date.today()})
    assert keyspace() == before


@pytest.mark.parametrize("name", ["queue with space", "", "q" * 129, "q/slash", "q\n", "é"])
def test_bad_queue_names(seeded: Client, keyspace: Callable[[], Any], name: str) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError):
        seeded.queue(name).put("k", {})
    assert keyspace() == before


def test_longest_allowed_queue_name(seeded: Client) -> None:
    name = "q" * 128
    seeded.queue(name).put("k", {}, jid="long")
    assert seeded.get_job("long").queue_name == name  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"jid": "has space"}, InvalidArgumentError),
        ({"jid": ""}, InvalidArgumentError),
        ({"jid": "j" * 129}, InvalidArgumentError),
        ({"jid": 12}, InvalidArgumentError),
        ({"delay": math.nan}, InvalidArgumentError),
        ({"delay": math.inf}, InvalidArgumentError),
        ({"delay": -1}, InvalidArgumentError),
        ({"delay": "5"}, InvalidArgumentError),
        ({"priority": math.nan}, InvalidArgumentError),
        ({"priority": -math.inf}, InvalidArgumentError),
        ({"priority": "high"}, InvalidArgumentError),
        ({"priority": True}, InvalidArgumentError),
        ({"retries": -1}, InvalidArgumentError),
        ({"retries": 1.5}, InvalidArgumentError),
        ({"retries": "5"}, InvalidArgumentError),
        ({"tags": "not-a-list"}, InvalidArgumentError),
        ({"tags": ["ok", 3]}, InvalidArgumentError),
        ({"tags": ["bad\x00tag"]}, InvalidArgumentError),
        ({"tags": [""]}, InvalidArgumentError),
        ({"depends": "existing"}, InvalidArgumentError),
        ({"depends": ["has space"]}, InvalidArgumentError),
    ],
)
def test_bad_put_options(
    seeded: Client, keyspace: Callable[[], Any], kwargs: dict[str, Any], error: type[Exception]
) -> None:
    before = keyspace()
    with pytest.raises(error) as info:
        seeded.queue("q").put("k", {}, **kwargs)
    assert isinstance(info.value, ValueError)
    assert keyspace() == before


@pytest.mark.parametrize("klass", ["", "bad\nklass", 42, None])
def test_bad_klass(seeded: Client, keyspace: Callable[[], Any], klass: Any) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError):
        seeded.queue("q").put(klass, {})
    assert keyspace() == before


@pytest.mark.parametrize("count", [0, -1, 1.5, "3", None, True])
def test_bad_pop_and_peek_counts(
    seeded: Client, keyspace: Callable[[], Any], count: Any
) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError):
        seeded.queue("q").pop(count)
    with pytest.raises(InvalidArgumentError):
        seeded.queue("q").peek(count)
    assert keyspace() == before


def test_count_is_clamped_to_1000() -> None:
    assert check.count(5000) == 1000
    assert check.count(1000) == 1000
    assert check.count(7) == 7


@pytest.mark.parametrize(
    ("interval", "offset"),
    [(0, 0), (-5, 0), (math.nan, 0), (math.inf, 0), (60, -1), (60, math.nan)],
)
def test_bad_recur_numbers(
    seeded: Client, keyspace: Callable[[], Any], interval: float, offset: float
) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError):
        seeded.queue("q").recur("k", {}, interval, offset=offset)
    assert keyspace() == before


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("heartbeat", "abc"),
        ("heartbeat", 0),
        ("heartbeat", -1),
        ("heartbeat", math.nan),
        ("heartbeat", True),
        ("grace-period", -5),
        ("jobs-history-count", 1.5),
        ("q-heartbeat", "soon"),
        ("q-max-concurrency", -1),
        ("q-max-concurrency", 2.5),
        ("application", None),
        ("application", math.inf),
        ("bad\nkey", 1),
    ],
)
def test_bad_config_values(
    seeded: Client, keyspace: Callable[[], Any], key: str, value: Any
) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError) as info:
        seeded.config.set(key, value)
    assert isinstance(info.value, ValueError)
    if key != "bad\nkey":
        assert isinstance(info.value, ConfigValueError)
    assert keyspace() == before


def test_non_finite_clock_refused_before_redis(
    redis_client: Any, keyspace: Callable[[], Any]
) -> None:
    client = Client(redis_client, clock=lambda: math.nan, worker_name="w")
    before = keyspace()
    with pytest.raises(InvalidArgumentError):
        client.queue("q").put("k", {})
    assert keyspace() == before


@pytest.mark.parametrize("name", ["has space", "", "w" * 257, "tab\tname", 7])
def test_bad_worker_names(redis_client: Any, name: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        Client(redis_client, worker_name=name)


def test_bad_max_payload_bytes(redis_client: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        Client(redis_client, max_payload_bytes=0)


@pytest.mark.parametrize(
    "jid", ["", "with space", "tab\tjid", "x" * 1025, "nl\n"]
)
def test_bad_existing_jids(seeded: Client, keyspace: Callable[[], Any], jid: str) -> None:
    before = keyspace()
    for action in (
        lambda: seeded.cancel(jid),
        lambda: seeded.timeout(jid),
        lambda: seeded.track(jid),
    ):
        with pytest.raises(InvalidArgumentError):
            action()
    assert keyspace() == before


@pytest.mark.parametrize("jid", ["", "tab\tjid", "x" * 1025, "nl\n"])
def test_reads_refuse_what_no_client_can_have_written(seeded: Client, jid: str) -> None:
    for action in (
        lambda: seeded.get_job(jid),
        lambda: seeded.get_jobs([jid]),
        lambda: seeded.recurring(jid),
    ):
        with pytest.raises(InvalidArgumentError):
            action()


def test_reads_accept_jids_only_other_clients_write(seeded: Client, lua: Any) -> None:
    # Strict for writes, lenient for reads: a jid with a space, put by another client,
    # can be read back (the admin shows such jobs).
    lua("put", 1000, "w", "q", "with space", "k", "{}", 0)
    assert seeded.get_job("with space").jid == "with space"  # type: ignore[union-attr]
    assert [job.jid for job in seeded.get_jobs(["with space"])] == ["with space"]
    assert seeded.recurring("with space") is None


def test_existing_jid_rule_accepts_other_clients_formats() -> None:
    for jid in ["0123456789abcdef0123456789abcdef", "f0a3d2c4-1b2a-4c3d-8e9f-001122334455",
                "nightly-report-42", "ns:job/1+2=3", "x" * 1024]:
        assert check.jid(jid) == jid


def test_round_trip_of_nested_empties_and_unicode(client: Client) -> None:
    data = {"a": [], "b": {}, "c": [[], {}], "d": "ünïcødé ✓", "e": None, "f": 1.5, "g": 2**53 - 1}
    jid = client.queue("q").put("k", data)
    assert client.get_job(jid).data == data  # type: ignore[union-attr]


def test_tuples_are_accepted_as_lists(client: Client) -> None:
    jid = client.queue("q").put("k", {"t": (1, 2)})
    assert client.get_job(jid).data == {"t": [1, 2]}  # type: ignore[union-attr]


def test_free_text_with_a_lone_surrogate_is_escaped_not_refused() -> None:
    """A job's exception text can hold one; its failure must still be recorded."""
    command = commands.fail("j", "w", "q-ValueError", "bad \ud800 input")
    assert command.args[3] == "bad \\ud800 input"
    assert commands.fail("j", "w", "g", "plain é").args[3] == "plain é"


class _Big(enum.IntEnum):
    """An int subclass: checked as an int, not skipped as a plain value."""

    HUGE = 2**60


class _Pairs(Mapping[Any, Any]):
    """A Mapping that is no dict: its keys are checked too."""

    def __init__(self, items: dict[Any, Any]) -> None:
        self.items_ = items

    def __getitem__(self, key: Any) -> Any:
        return self.items_[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items_)

    def __len__(self) -> int:
        return len(self.items_)


@pytest.mark.parametrize(("data", "message"), [
    ({"a": [(1, 2**53)]}, "beyond"),
    ({"a": _Big.HUGE}, "beyond"),
    ({"a": _Pairs({1: "x"})}, "keys must be strings"),
    (_Pairs({"a": {2: "x"}}), "keys must be strings"),
    ({"a": functools.reduce(lambda inner, _: [inner], range(501), [])}, "nested too deeply"),
])
def test_data_checks_reach_every_kind_of_value(data: Any, message: str) -> None:
    with pytest.raises(JobDataError, match=message):
        check.encode_data(data, 1 << 20)


def test_data_encoded_from_deep_in_a_stack_is_refused_typed_not_with_recursion_error() -> None:
    # Data within MAX_DEPTH, but the caller's own stack leaves too little room to walk it.
    def descend(frames: int) -> str:
        if frames:
            return descend(frames - 1)
        return check.encode_data({"a": nested(check.MAX_DEPTH - 10)}, 1 << 20)

    frames = sys.getrecursionlimit() - check.MAX_DEPTH // 2
    with pytest.raises(JobDataError, match="nested too deeply"):
        descend(frames - len(inspect.stack(0)))


def test_plain_values_and_booleans_pass_the_data_checks() -> None:
    data = {"t": True, "f": False, "n": None, "s": "x", "i": -(2**53 - 1), "x": 0.5}
    assert check.encode_data(data, 1 << 20) == (
        '{"t":true,"f":false,"n":null,"s":"x","i":-9007199254740991,"x":0.5}')
