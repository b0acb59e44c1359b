"""Job data and names the script cannot store faithfully are refused before Redis; the rest
round-trips exactly through the real script (`put`, then `get`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client, InvalidArgumentError, JobDataError, ScriptError, commands
from django_qless.core import validation as check

SAFE = 2**53 - 1

#: Values every qless client reads back as written (JSON numbers are doubles in Lua and JS).
ROUND_TRIPS: list[Any] = [
    SAFE, -SAFE, 0, 1.0, -0.0, 0.1, 1 / 3, 1e308, -1.7976931348623157e308, 5e-324,
    123456789.12345679, 2.0**80, "ünïcødé ✓ 😀",
]

#: Integers other clients read back with other digits.
UNSAFE_INTEGERS = [SAFE + 1, -SAFE - 1, 2**63, 10**30, 10**5000]

SURROGATE = "\ud800"


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=repr)
def test_accepted_values_come_back_exactly_from_the_script(client: Client, value: Any) -> None:
    jid = client.queue("q").put("k", {"v": value, "nested": [{"v": value}]})
    raw = client.get_job(jid).raw_data  # type: ignore[union-attr]
    back = json.loads(raw)
    # repr tells -0.0 from 0 and 1.0 from 1, which == does not.
    assert repr(back["v"]) == repr(value)
    assert repr(back["nested"][0]["v"]) == repr(value)


@pytest.mark.parametrize("value", UNSAFE_INTEGERS, ids=lambda v: f"{v.bit_length()}-bit")
def test_integers_beyond_2_53_are_refused(
    client: Client, keyspace: Callable[[], Any], value: int
) -> None:
    before = keyspace()
    with pytest.raises(JobDataError, match=r"beyond \+-\(2\*\*53 - 1\)"):
        client.queue("q").put("k", {"deep": [{"n": value}]})
    assert keyspace() == before


def test_the_script_would_have_changed_an_unsafe_integer(client: Client, lua: Any) -> None:
    # Why the limit: the script's cjson re-encodes data (a heartbeat with data) as doubles.
    lua("put", 1000, "worker-1", "q", "j", "k", json.dumps({"n": SAFE + 2}), 0)
    lua("pop", 1000, "q", "worker-1", 1)
    lua("heartbeat", 1000, "j", "worker-1", json.dumps({"n": SAFE + 2}))
    assert json.loads(client.get_job("j").raw_data)["n"] != SAFE + 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "data",
    [{"v": SURROGATE}, {SURROGATE: 1}, {"deep": [{"x": "ok" + "\udfff"}]}],
    ids=["value", "key", "nested"],
)
def test_lone_surrogates_in_data_are_refused(
    client: Client, keyspace: Callable[[], Any], data: dict[str, Any]
) -> None:
    before = keyspace()
    with pytest.raises(JobDataError, match="lone surrogate"):
        client.queue("q").put("k", data)
    assert keyspace() == before


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.queue("q").put("k" + SURROGATE, {}),
        lambda c: c.queue("q").put("k", {}, tags=["t" + SURROGATE]),
        lambda c: c.queue("q").put("k", {}, jid=SURROGATE),
        lambda c: c.queue("q" + SURROGATE),
        lambda c: c.put(commands.put("w", "q", "j" + SURROGATE, "k", "{}")),
        lambda c: c.put(commands.put("w", "q", "j", "k", "{}", depends=[SURROGATE])),
        lambda c: Client(c.redis, worker_name="w" + SURROGATE),
    ],
    ids=["klass", "tag", "new-jid", "queue", "existing-jid", "depends", "worker"],
)
def test_lone_surrogates_in_names_are_refused(
    client: Client, keyspace: Callable[[], Any], call: Callable[[Client], object]
) -> None:
    before = keyspace()
    with pytest.raises(InvalidArgumentError) as info:
        call(client)
    assert not isinstance(info.value, JobDataError | ScriptError)
    assert keyspace() == before


def test_names_read_back_refuse_surrogates_too() -> None:
    for read in (lambda: check.jid(SURROGATE), lambda: check.existing_name(SURROGATE, "queue")):
        with pytest.raises(InvalidArgumentError, match="invalid"):
            read()
