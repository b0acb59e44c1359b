"""Builders and assertions shared by the raw-script protocol tests."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import redis

# A UTC midnight and a time one hour into that day: every test passes `now` explicitly.
DAY = 1_700_006_400
T0 = DAY + 3600
HEARTBEAT = 60
GRACE = 10

JOB_KEYS = {
    "jid", "klass", "state", "queue", "worker", "tracked", "priority", "expires",
    "retries", "remaining", "data", "tags", "history", "failure", "spawned_from_jid",
    "dependents", "dependencies",
}
JOB_HASH_FIELDS = {
    "jid", "klass", "data", "priority", "tags", "state", "worker", "expires", "queue",
    "retries", "remaining", "time", "failure", "spawned_from_jid", "grace", "scheduled",
}

_PREFIXES = (
    re.compile(r"^ERR\s+"),
    re.compile(r"^Error running script \(call to f_[0-9a-f]+\):\s*"),
    re.compile(r"^@?user_script:\s*\d+:\s*"),
)
_SUFFIX = re.compile(r"\s*script: [0-9a-f]+, on @user_script:\d+\.$")


def error_message(exc: BaseException) -> str:
    """The script's own message, without the Redis 6.2 / 7.x wrapping around it."""
    text = str(exc).strip()
    text = _SUFFIX.sub("", text)
    previous = None
    while previous != text:
        previous = text
        for prefix in _PREFIXES:
            text = prefix.sub("", text)
    return text


def expect_error(lua: Any, pattern: str, command: str, now: Any, *args: Any) -> str:
    """Run a call that must fail and check its message against a regex (full match)."""
    with pytest.raises(redis.ResponseError) as info:
        lua(command, now, *args)
    message = error_message(info.value)
    assert re.fullmatch(pattern, message, re.DOTALL), f"{message!r} !~ {pattern!r}"
    # Ruby's client extracts the text after `user_script:<line>:`: errors keep position info.
    assert re.search(r"user_script:\d+:\s*" + re.escape(message[:30]), str(info.value))
    return message


def options(opts: dict[str, Any]) -> list[Any]:
    """Flatten `name, value` option pairs, JSON-encoding lists."""
    flat: list[Any] = []
    for name, value in opts.items():
        flat += [name, json.dumps(value) if isinstance(value, list) else value]
    return flat


def put(
    lua: Any,
    now: float,
    jid: str,
    queue: str = "q",
    *,
    klass: str = "Klass",
    data: str = '{"a": 1}',
    delay: float = 0,
    worker: str = "client",
    command: str = "put",
    **opts: Any,
) -> Any:
    """Call `put` with the usual positional arguments and `name, value` options."""
    return lua(command, now, worker, queue, jid, klass, data, delay, *options(opts))


def listish(value: Any) -> list[Any]:
    """cjson encodes an empty list as `{}`: turn that back into []."""
    if value == {}:
        return []
    assert isinstance(value, list), value
    return value


def pop(lua: Any, now: float, queue: str = "q", worker: str = "w1", count: int = 1) -> list[Any]:
    """Pop and decode; `{}` (nothing popped) becomes []."""
    return listish(lua.json("pop", now, queue, worker, count))


def peek(lua: Any, now: float, queue: str = "q", count: int = 10) -> list[Any]:
    """Peek and decode; `{}` becomes []."""
    return listish(lua.json("peek", now, queue, count))


def jids(jobs: list[dict[str, Any]]) -> list[str]:
    """The jids of decoded job objects, in order."""
    return [job["jid"] for job in jobs]


def get(lua: Any, jid: str, now: float = T0) -> Any:
    """The decoded job object, or None."""
    return lua.json("get", now, jid)


def history(redis_client: redis.Redis, jid: str) -> list[list[Any]]:
    """The raw history list of a job, each entry decoded."""
    return [json.loads(item) for item in redis_client.lrange(f"ql:j:{jid}-history", 0, -1)]


def whats(redis_client: redis.Redis, jid: str) -> list[str]:
    """Just the `what` of each history entry."""
    return [entry[1] for entry in history(redis_client, jid)]


def fmt_time(now: float) -> str:
    """How the script stores `time`: a float with 20 decimals."""
    return f"{now:.20f}"


def cjson_text(redis_client: redis.Redis, pairs: list[tuple[str, str | bool | None]]) -> str:
    """What cjson emits for a table built with these keys, in this order, in one constructor.

    The key order of cjson output follows the Lua table layout, so the expected text is
    computed by the same Lua/cjson inside the server under test.
    """
    fields = []
    args: list[str] = []
    for name, value in pairs:
        if value is None or isinstance(value, bool):
            literal = "nil" if value is None else str(value).lower()
            fields.append(f'["{name}"] = {literal}')
        else:
            args.append(value)
            fields.append(f'["{name}"] = ARGV[{len(args)}]')
    source = "return cjson.encode({" + ", ".join(fields) + "})"
    return str(redis_client.eval(source, 0, *args))


def day_of(now: float) -> int:
    """The stats day bucket of a time (UTC midnight)."""
    return int(now - now % 86400)
