"""One live worker per name: a second live process under a held --worker-name refuses to start."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless.core import Client, keys
from django_qless.core.presence import Presence, publish, text
from tests.support import wait_for

from .conftest import ROOT, WorkerProcess, job_state

Spawn = Callable[..., WorkerProcess]
Ledger = Callable[[], list[dict[str, Any]]]


def holder(qless: Client, name: str) -> Presence | None:
    """The presence published under `name`, if any."""
    raw = qless.redis.hgetall(keys.worker_presence(name))
    fields = {text(k): text(v) for k, v in raw.items()}
    return Presence.from_fields(name, fields) if fields else None


def published_by(qless: Client, name: str, timeout: float = 20.0) -> Presence:
    """Wait until a worker process publishes under `name`; its presence."""
    found: Presence = wait_for(lambda: holder(qless, name), timeout=timeout,
                               what=f"a presence of {name}")
    return found


def test_a_second_live_worker_under_the_same_name_refuses_to_start(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    first = spawn("q", "--worker-name", "dup")
    held = published_by(qless, "dup")
    assert held.pid == first.proc.pid
    with pytest.raises(CommandError) as refused:
        call_command("qless_worker", "q", "--burst", "--worker-name", "dup", verbosity=0)
    message = str(refused.value)
    assert "'dup'" in message and f"pid {first.proc.pid}" in message
    assert f"host {socket.gethostname()}" in message
    assert re.search(r"seen \d+\.\ds ago", message) and "--worker-name" in message
    # The refused worker wrote nothing under the name and ran nothing.
    jid = put("worker.mark")
    wait_for(lambda: job_state(qless, jid) == "complete", timeout=15)
    assert [entry["pid"] for entry in ledger()] == [first.proc.pid]
    after = holder(qless, "dup")
    assert after is not None and after.pid == first.proc.pid
    first.signal(signal.SIGTERM)
    assert first.wait() == 0, first.output()


def test_a_name_held_on_another_host_is_refused(qless: Client) -> None:
    now = time.time()
    publish(qless, Presence(name="shared", host="elsewhere.example", pid=4242, version="1",
                            queues=("q",), started=now - 60, seen=now - 2), ttl=15)
    with pytest.raises(CommandError) as refused:
        call_command("qless_worker", "q", "--burst", "--worker-name", "shared", verbosity=0)
    message = str(refused.value)
    assert "'shared'" in message and "pid 4242 on host elsewhere.example" in message
    seen = re.search(r"seen (\d+\.\d)s ago", message)
    assert seen is not None and 2.0 <= float(seen.group(1)) < 15


def test_a_worker_restarted_after_its_process_died_starts(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    dead = spawn("q", "--worker-name", "phoenix")
    published_by(qless, "phoenix")
    dead.proc.send_signal(signal.SIGKILL)
    dead.proc.wait(10)
    held = holder(qless, "phoenix")
    assert held is not None and held.pid == dead.proc.pid  # still fresh: not expired yet
    jid = put("worker.mark")
    call_command("qless_worker", "q", "--burst", "--worker-name", "phoenix", verbosity=0)
    assert job_state(qless, jid) == "complete"
    assert [(entry["pid"], entry["worker"]) for entry in ledger()] == [(os.getpid(), "phoenix")]


def test_processes_under_one_name_run_side_by_side_and_a_second_group_is_refused(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    group = spawn("q", "--processes", "2", "--worker-name", "team")
    first, second = published_by(qless, "team-0"), published_by(qless, "team-1")
    assert first.pid != second.pid and group.proc.poll() is None
    jids = [put("worker.mark", str(n)) for n in range(4)]
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in jids), timeout=15)
    again = spawn("q", "--processes", "2", "--worker-name", "team")
    assert again.wait(timeout=30) != 0
    assert "worker name 'team-0' is held by a live worker" in again.output()
    assert "started worker process" not in again.output()
    assert group.proc.poll() is None
    group.signal(signal.SIGTERM)
    assert group.wait(timeout=30) == 0, group.output()


def test_a_reloaded_worker_takes_its_name_again(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    worker = spawn("q", "--reload", "--worker-name", "reloaded")
    before = published_by(qless, "reloaded")
    # A change to a loaded module (again each second: the reloader may not have read the
    # file's first time yet): the reloader replaces its child.
    jobs = Path(ROOT, "tests", "workerapp", "qless_jobs.py")

    def reloaded() -> Presence | None:
        found = holder(qless, "reloaded")
        if found is not None and found.pid != before.pid:
            return found
        later = time.time() + 1
        os.utime(jobs, (later, later))
        time.sleep(0.5)
        return None

    after: Presence = wait_for(reloaded, timeout=40,
                               what="the reloaded child's presence")
    jid = put("worker.mark")
    wait_for(lambda: job_state(qless, jid) == "complete", timeout=15)
    assert [entry["pid"] for entry in ledger()] == [after.pid]
    assert "held by a live worker" not in worker.output()
    worker.signal(signal.SIGINT)
    worker.wait(timeout=30)
