"""The per-job commands run as FCALL of the function library: same replies, keys and errors as
EVALSHA of the script, loaded again when Redis lost it, and EVALSHA where Redis has no
functions (6.2, an ACL without them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from django_qless.core import Client, JobGoneError, ScriptArgumentError
from django_qless.core.replies import clean_message
from django_qless.core.script import FUNCTION_COMMANDS, library_name, library_text, script_text
from tests.lua.test_redis62 import redis62_binary
from tests.redis_harness import RedisServer
from tests.support import FakeClock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lua"))
import build  # noqa: E402 - lua/build.py, the generator of both files

#: Every per-job command with the options that take other paths: (command, args) in order.
SCENARIO: list[tuple[str, tuple[Any, ...]]] = [
    ("put", ("w0", "q", "a", "K", '{"n":1}', 0, "priority", 5, "tags", '["t"]',
             "retries", 2)),
    ("put", ("w0", "q", "b", "K", '{"n":2}', 0, "depends", '["a"]')),
    ("put", ("w0", "q", "c", "K", '{"n":3}', 30)),
    ("put.many", (6, "w0", "q", "d", "K", "{}", 0, 6, "w0", "r", "e", "K", "{}", 0)),
    ("put.ifabsent", ("any", "w0", "q", "a", "K", "{}", 0)),
    ("put.ifabsent", ("active", "w0", "q", "f", "K", "{}", 0)),
    ("pop", ("q", "w1", 1)),
    ("heartbeat", ("a", "w1", '{"n":10}')),
    ("complete.pop", ("a", "w1", "q", '{"n":11}', 2, "q", "r")),
    ("fail", ("d", "w1", "boom", "it broke", "{}")),
    ("retry", ("f", "q", "w1", 0, "later", "again")),
    ("pop.first", ("w2", 2, "r", "q")),
    ("complete", ("e", "w2", "r", "{}", "next", "r2", "delay", 0)),
    ("requeue", ("w0", "r2", "e", "K", "{}", 0)),
    ("complete", ("zz", "w2", "r", "{}")),  # refused: no such job
    ("pop", ("q", "w1", "x")),  # refused: a count that is no number
]


def dump(connection: redis.Redis) -> dict[str, Any]:
    """Every key of the current database with its type and whole value."""
    readers = {
        "string": connection.get,
        "hash": connection.hgetall,
        "list": lambda key: connection.lrange(key, 0, -1),
        "set": lambda key: sorted(connection.smembers(key)),
        "zset": lambda key: connection.zrange(key, 0, -1, withscores=True),
    }
    return {key: (kind, readers[kind](key)) for key in sorted(connection.keys("*"))
            for kind in [connection.type(key)]}


def run(call: Any) -> list[Any]:
    """The scenario's replies through `call(command, now, *args)`, errors as their text."""
    answers: list[Any] = []
    for step, (command, args) in enumerate(SCENARIO):
        try:
            answers.append(call(command, 1_700_000_000 + step, *args))
        except redis.ResponseError as exc:
            # Without the position and the trailer (file, line, sha), the text must match.
            answers.append(clean_message(str(exc)))
    return answers


@pytest.fixture
def fresh(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A decoded connection on an empty database, without any function library loaded."""
    connection = redis_server.client(decode_responses=True)
    connection.flushall()
    connection.function_flush()
    yield connection
    connection.flushall()
    connection.close()


def test_the_library_is_the_built_sources_under_a_name_per_build() -> None:
    assert library_text() == build.render_library()
    first, second, third = library_text().split("\n")[:3]
    assert first == f"#!lua name={library_name()}"
    assert library_name() == build.library_name()
    assert library_name().startswith("django_qless_") and len(library_name()) == 13 + 16
    # Both files come from one set of sources: the same sha256 line.
    assert third == script_text().split("\n")[1]
    assert second.startswith("-- django_qless qless library. GENERATED")


def test_fcall_answers_and_writes_exactly_what_evalsha_does(fresh: redis.Redis) -> None:
    fresh.function_load(library_text())
    script = fresh.register_script(script_text())
    evalsha = run(lambda command, now, *args: script(keys=[], args=[command, now, *args]))
    by_script = dump(fresh)
    fresh.flushall()
    fcall = run(lambda *args: fresh.fcall(library_name(), 0, *args))
    assert fcall == evalsha
    assert dump(fresh) == by_script
    assert evalsha[-2] == "Complete(): Job zz does not exist"
    assert evalsha[9:11] == ["d", 4]  # fail and retry took their running jobs
    assert len(by_script) > 20  # the scenario wrote jobs, queues, stats, workers, tags


def test_the_client_sends_the_per_job_commands_as_fcall_and_loads_the_library(
    fresh: redis.Redis,
) -> None:
    client = Client(fresh, clock=FakeClock(), worker_name="w1")
    fresh.config_resetstat()
    jid = client.queue("q").put("K", {"n": 1})
    [job] = client.queue("q").pop()
    assert job.complete() == "complete"
    assert client.get_job(jid).state == "complete"  # type: ignore[union-attr]
    stats = fresh.info("commandstats")
    # The put found no library, which was loaded, and the put sent again: 2 + pop + complete.
    assert stats["cmdstat_fcall"]["calls"] == 4
    assert stats["cmdstat_function|load"]["calls"] == 1
    assert stats["cmdstat_evalsha"]["calls"] == 1  # get is not a per-job command
    names = [dict(zip(entry[::2], entry[1::2], strict=True))["library_name"]
             for entry in fresh.function_list()]
    assert names == [library_name()]
    assert client.queue("q").length() == 0  # the put that found no library ran once


def test_a_library_lost_by_redis_is_loaded_again_and_nothing_runs_twice(
    fresh: redis.Redis,
) -> None:
    client = Client(fresh, clock=FakeClock(), worker_name="w1")
    queue = client.queue("q")
    queue.put("K", {})
    for flush in (fresh.function_flush, fresh.script_flush):
        flush()
        queue.put("K", {})
        [job] = queue.pop()
        assert job.complete() == "complete"
    assert queue.length() == 1
    assert len(fresh.keys("ql:j:*-history")) == 3


def test_script_errors_are_typed_the_same_either_way(fresh: redis.Redis) -> None:
    client = Client(fresh, clock=FakeClock(), worker_name="w1")
    with pytest.raises(JobGoneError, match=r"^complete\b.*Job nope does not exist") as by_fcall:
        client.call("complete", "nope", "w1", "q", "{}")
    with pytest.raises(ScriptArgumentError, match="delay") as bad:
        client.call("put", "w1", "q", "j", "K", "{}", "soon")
    assert "user_function" not in str(by_fcall.value) and "user_function" not in str(bad.value)
    script = fresh.register_script(script_text())
    with pytest.raises(redis.ResponseError) as by_script:
        script(keys=[], args=["complete", 1, "nope", "w1", "q", "{}"])
    assert str(by_fcall.value).endswith(str(by_script.value).split(": ", 1)[1].split(" script:")[0])


def test_every_per_job_command_exists_in_the_script() -> None:
    for command in FUNCTION_COMMANDS:
        assert f"'{command}'" in script_text(), command


@pytest.mark.parametrize("how", ["redis 6.2", "acl without functions"])
def test_a_redis_that_will_not_run_the_library_is_called_by_evalsha(
    how: str, redis_server: RedisServer
) -> None:
    server = RedisServer(binary=str(redis62_binary())).start() if how == "redis 6.2" else None
    if server is None:
        admin = redis_server.client()
        admin.flushall()
        admin.function_flush()
        admin.acl_setuser("nofunctions", enabled=True, nopass=True, keys=["*"],
                          channels=["*"], commands=["+@all", "-fcall", "-function"])
        connection = redis_server.client(username="nofunctions", password="any")
    else:
        connection = server.client()
    try:
        client = Client(connection, clock=FakeClock(), worker_name="w1")
        # (What it logs, once per process: test_a_worker_on_redis_62_says_once_what_it_costs.)
        jid = client.queue("q").put("K", {"n": 1})
        assert not client.script.uses_library
        [job] = client.queue("q").pop()
        assert job.complete() == "complete"
        assert json.loads(client.call("get", jid))["state"] == "complete"
        assert client.queue("q").length() == 0
        # A second client on the same pool asks no more.
        assert not Client(connection, clock=FakeClock()).script.uses_library
    finally:
        connection.close()
        if server is not None:
            server.stop()
        else:
            redis_server.client().acl_deluser("nofunctions")


#: A worker process' life on one Redis: puts through two connection pools, a burst worker
#: draining them, then its log records as JSON lines (level, message).
WORKER_RUN = """
import json, logging, sys
import django
django.setup()
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append([record.levelname, record.getMessage()])
logging.getLogger("django_qless").addHandler(Keep())
import redis
from django.core.management import call_command
from django_qless.connection import get_client
from django_qless.core import Client
for client in (get_client(), Client(redis.Redis.from_url(sys.argv[1]))):
    client.queue("q").put("worker.noop", {"args": [], "kwargs": {}})
call_command("qless_worker", "q", "--burst", "--processes", "2", verbosity=0)
call_command("qless_worker", "q", "--burst", verbosity=0)
print(json.dumps(records))
"""


def test_a_worker_on_redis_62_says_once_what_it_costs() -> None:
    server = RedisServer(binary=str(redis62_binary())).start()
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.workerapp.settings",
               "QLESS_TEST_URL": server.url, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", WORKER_RUN, server.url], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        records = json.loads(done.stdout.strip().splitlines()[-1])
        assert server.client().zcard("ql:completed") == 2  # both jobs ran
    finally:
        server.stop()
    told = [(level, message) for level, message in records if "function library" in message]
    assert len(told) == 1, told
    level, message = told[0]
    assert level == "INFO"
    assert "EVALSHA of the script instead of FCALL" in message and "µs more per call" in message
