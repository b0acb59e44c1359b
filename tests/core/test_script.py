"""Loading qless.lua, surviving SCRIPT FLUSH and restarts, and mapping its errors."""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from django_qless.core import (
    Client,
    DependencyError,
    InvalidArgumentError,
    JobGoneError,
    JobNotFoundError,
    JobStateError,
    LockLostError,
    QlessError,
    QueueFullError,
    ScriptArgumentError,
    ScriptError,
    replies,
)
from django_qless.core import script as script_module
from tests.redis_harness import RedisServer
from tests.support import FakeClock

PACKAGED = Path(script_module.__file__).with_name("qless.lua")


def test_script_text_is_the_packaged_file() -> None:
    assert script_module.script_text() == PACKAGED.read_text(encoding="utf-8")
    expected = hashlib.sha1(PACKAGED.read_bytes(), usedforsecurity=False).hexdigest()
    assert script_module.script_sha() == expected


def test_script_is_read_once_per_process(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    calls = []
    real_files = importlib.resources.files

    def counting_files(package: Any) -> Any:
        calls.append(package)
        return real_files(package)

    script_module.script_text.cache_clear()
    monkeypatch.setattr(script_module.importlib.resources, "files", counting_files)
    try:
        clients = [Client(redis_client, worker_name=f"w{i}") for i in range(3)]
        for client in clients:
            client.queue("q").length()
    finally:
        script_module.script_text.cache_clear()
    assert len(calls) == 1


def test_client_sha_matches_what_redis_loads(client: Client, redis_client: redis.Redis) -> None:
    client.queue("q").length()
    assert client.script.sha == script_module.script_sha()
    assert redis_client.script_exists(client.script.sha) == [True]


def test_calls_survive_script_flush(client: Client, redis_client: redis.Redis) -> None:
    queue = client.queue("q")
    queue.put("k", {"n": 1}, jid="a")
    redis_client.script_flush()
    assert redis_client.script_exists(client.script.sha) == [False]
    queue.put("k", {"n": 2}, jid="b")
    assert queue.length() == 2
    assert redis_client.script_exists(client.script.sha) == [True]


@pytest.fixture
def private_server() -> Iterator[RedisServer]:
    """A redis-server of our own that the test may stop and restart."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_calls_survive_a_redis_restart(private_server: RedisServer, clock: FakeClock) -> None:
    connection = private_server.client(decode_responses=True)
    client = Client(connection, clock=clock, worker_name="w")
    client.queue("q").put("k", {}, jid="before")
    port = private_server.port
    private_server.stop()
    with pytest.raises(redis.ConnectionError) as info:
        client.queue("q").length()
    assert not isinstance(info.value, QlessError)  # propagated unchanged
    restarted = RedisServer(port=port).start()
    try:
        # The new server has neither the data nor the script: NOSCRIPT is handled inside.
        assert client.get_job("before") is None
        client.queue("q").put("k", {}, jid="after")
        assert client.queue("q").length() == 1
    finally:
        connection.close()
        restarted.stop()


def test_bytes_replies_are_decoded(redis_server: RedisServer, redis_client: redis.Redis) -> None:
    raw = redis_server.client()  # decode_responses=False
    client = Client(raw, clock=lambda: 1000.0, worker_name="w")
    try:
        jid = client.queue("q").put("k", {"x": "ü"})
        assert isinstance(jid, str)
        assert client.get_job(jid).data == {"x": "ü"}  # type: ignore[union-attr]
        assert client.completed() == []
    finally:
        raw.close()


def test_connection_error_propagates_unchanged(clock: FakeClock) -> None:
    from tests.redis_harness import free_port

    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.5)
    client = Client(dead, clock=clock, worker_name="w")
    with pytest.raises(redis.ConnectionError) as info:
        client.queue("q").put("k", {})
    assert not isinstance(info.value, QlessError)


# Message cleaning ------------------------------------------------------------------------

SHA = "a" * 40


@pytest.mark.parametrize(
    "raw",
    [
        f"user_script:12: Complete(): Job j is not currently running: waiting script: {SHA}, "
        "on @user_script:12.",
        f"Error running script (call to f_{SHA}): @user_script:12: user_script:12: "
        "Complete(): Job j is not currently running: waiting",
        f"Error running script (call to f_{SHA}): @user_script:12: "
        "Complete(): Job j is not currently running: waiting",
        f"Complete(): Job j is not currently running: waiting script: {SHA}, on @user_script:12.",
    ],
    ids=["redis7", "redis6", "redis6-no-position", "redis7-no-position"],
)
def test_clean_message_strips_every_redis_wrapping(raw: str) -> None:
    assert replies.clean_message(raw) == "Complete(): Job j is not currently running: waiting"
    assert replies.is_script_error(redis.ResponseError(raw))


def test_plain_redis_errors_are_not_script_errors() -> None:
    assert not replies.is_script_error(redis.ResponseError("WRONGTYPE Operation against"))


def test_unknown_messages_fall_back_to_script_error() -> None:
    assert replies.classify("put", "something nobody expected") is ScriptError


def test_lock_lost_texts_only_mean_lock_lost_for_lock_commands() -> None:
    message = "Foo(): Job j is not currently running: waiting"
    for command in ("complete", "fail", "retry", "heartbeat"):
        assert replies.classify(command, message) is LockLostError
    assert replies.classify("priority", message) is not LockLostError


def test_non_script_response_errors_propagate(client: Client, redis_client: redis.Redis) -> None:
    if redis_client.info("server")["redis_version"] < "7":
        pytest.skip("Redis < 7 runs the script before refusing the write")
    redis_client.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError) as info:
            client.call("pop", "q", client.worker_name, 1)
        # Redis refusing a command that adds no job is passed on as it is...
        assert not isinstance(info.value, QlessError)
        # ...while a refused put is typed by the one reply decoder, on every path.
        with pytest.raises(QueueFullError):
            client.call("put", client.worker_name, "q", "j", "k", "{}", 0)
    finally:
        redis_client.config_set("maxmemory", 0)


# Mapping against the real script ----------------------------------------------------------


def running(client: Client, jid: str = "j", queue: str = "q") -> Any:
    """Put a job and pop it with `client`'s worker; returns the job."""
    client.queue(queue).put("k", {}, jid=jid)
    (job,) = client.queue(queue).pop()
    return job


def by_other_worker(client: Client, other: Client) -> Any:
    """A job running for `other`, seen by `client`."""
    running(other)
    return client.get_job("j")


CASES: list[tuple[str, Callable[[Client, Client], Any], type[ScriptError], str]] = [
    (
        "complete waiting",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.get_job("j").complete()),
        LockLostError,
        "not currently running",
    ),
    (
        "complete other worker",
        lambda c, o: by_other_worker(c, o).complete(),
        LockLostError,
        "another worker",
    ),
    (
        "complete other queue",
        lambda c, o: (running(c), c.call("complete", "j", c.worker_name, "elsewhere", "{}")),
        LockLostError,
        "another queue",
    ),
    (
        "fail waiting",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.get_job("j").fail("g", "m")),
        LockLostError,
        "not currently running",
    ),
    (
        "fail other worker",
        lambda c, o: by_other_worker(c, o).fail("g", "m"),
        LockLostError,
        "another worker",
    ),
    (
        "retry other worker",
        lambda c, o: by_other_worker(c, o).retry(),
        LockLostError,
        "another worker",
    ),
    (
        "retry waiting",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.get_job("j").retry()),
        LockLostError,
        "not currently running",
    ),
    (
        "heartbeat other worker",
        lambda c, o: by_other_worker(c, o).heartbeat(),
        LockLostError,
        "another worker",
    ),
    (
        "heartbeat waiting",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.get_job("j").heartbeat()),
        LockLostError,
        "not currently running",
    ),
    (
        "complete canceled",
        lambda c, o: (job := running(c), c.cancel("j"), job.complete()),
        JobGoneError,
        "does not exist",
    ),
    (
        "heartbeat canceled",
        lambda c, o: (job := running(c), c.cancel("j"), job.heartbeat()),
        JobGoneError,
        "does not exist",
    ),
    ("priority unknown", lambda c, o: c.call("priority", "nope", 5), JobNotFoundError, "nope"),
    (
        "requeue unknown",
        lambda c, o: c.call("requeue", c.worker_name, "q", "nope", "k", "{}", 0),
        JobNotFoundError,
        "does not exist",
    ),
    ("tag unknown", lambda c, o: c.call("tag", "add", "nope", "t"), JobNotFoundError, "nope"),
    ("log unknown", lambda c, o: c.call("log", "nope", "hello"), JobNotFoundError, "nope"),
    (
        "recur.update unknown",
        lambda c, o: c.call("recur.update", "nope", "priority", 1),
        JobNotFoundError,
        "nope",
    ),
    (
        "timeout unknown",
        lambda c, o: c.timeout("nope"),
        JobNotFoundError,
        "does not exist",
    ),
    (
        "cancel needed parent",
        lambda c, o: (
            c.queue("q").put("k", {}, jid="parent"),
            c.queue("q").put("k", {}, jid="child", depends=["parent"]),
            c.cancel("parent"),
        ),
        DependencyError,
        "dependency",
    ),
    (
        "self dependency",
        lambda c, o: c.queue("q").put("k", {}, jid="j", depends=["j"]),
        DependencyError,
        "itself",
    ),
    (
        "dependency cycle",
        lambda c, o: (
            c.queue("q").put("k", {}, jid="root"),
            c.queue("q").put("k", {}, jid="b", depends=["root"]),
            c.queue("q").put("k", {}, jid="x", depends=["b"]),
            c.get_job("b").depend("x"),
        ),
        DependencyError,
        "cycle",
    ),
    (
        "recur.update unknown option",
        lambda c, o: (
            c.queue("q").recur("k", {}, 60, jid="r"),
            c.call("recur.update", "r", "x", 1),
        ),
        ScriptArgumentError,
        "x",
    ),
    (
        "bad now",
        lambda c, o: c.script("get", "soon", "j"),
        ScriptArgumentError,
        "now",
    ),
    (
        "depends on waiting job",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.get_job("j").depend("x")),
        JobStateError,
        "depends state",
    ),
    (
        "timeout waiting job",
        lambda c, o: (c.queue("q").put("k", {}, jid="j"), c.timeout("j")),
        JobStateError,
        "not running",
    ),
    (
        "complete delay without next",
        lambda c, o: (running(c), c.call("complete", "j", c.worker_name, "q", "{}", "delay", 5)),
        ScriptArgumentError,
        "delay",
    ),
    (
        "put priority not a number",
        lambda c, o: c.call("put", c.worker_name, "q", "j", "k", "{}", 0, "priority", "high"),
        ScriptArgumentError,
        "priority",
    ),
    (
        "put data not JSON",
        lambda c, o: c.call("put", c.worker_name, "q", "j", "k", "{bad", 0),
        ScriptArgumentError,
        "",
    ),
    (
        "pop count not a number",
        lambda c, o: c.call("pop", "q", c.worker_name, "many"),
        ScriptArgumentError,
        "count",
    ),
    ("unknown command", lambda c, o: c.call("explode"), ScriptArgumentError, "explode"),
    (
        "odd options",
        lambda c, o: c.call("put", c.worker_name, "q", "j", "k", "{}", 0, "priority"),
        ScriptArgumentError,
        "",
    ),
]


@pytest.mark.parametrize(("name", "action", "error", "text"), CASES, ids=[c[0] for c in CASES])
def test_script_errors_map_to_typed_exceptions(
    client: Client,
    other: Client,
    name: str,
    action: Callable[[Client, Client], Any],
    error: type[ScriptError],
    text: str,
) -> None:
    with pytest.raises(ScriptError) as info:
        action(client, other)
    assert type(info.value) is error, info.value.message
    assert text in info.value.message
    assert "user_script" not in str(info.value)
    assert script_module.script_sha() not in str(info.value)
    assert isinstance(info.value.__cause__, redis.ResponseError)


def test_job_gone_is_both_lock_lost_and_not_found() -> None:
    assert issubclass(JobGoneError, LockLostError)
    assert issubclass(JobGoneError, JobNotFoundError)


def test_script_argument_errors_are_value_errors() -> None:
    assert issubclass(ScriptArgumentError, InvalidArgumentError)
    assert issubclass(ScriptArgumentError, ValueError)
    assert not issubclass(LockLostError, ValueError)
