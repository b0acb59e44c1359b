"""Run hooks around each job: serial, thread pool, `async def` on the loop, isolated child.

The hook below writes its enter and exit to a file (a child process's writes count too)
and sets a context variable the job reads back: each job must see its own jid.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from django_qless import qless_job
from django_qless.core import Client, Job
from django_qless.hooks import META_KEY, JobRun, add_run_hook, remove_run_hook
from django_qless.worker import Worker

from .conftest import job_state

CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("hooked_jid",
                                                                      default=None)
#: Where the hook and the jobs below write their lines (set per test).
LOG: list[Path] = []


def write(**entry: Any) -> None:
    """Append one JSON line (small appends of one write each do not interleave)."""
    with LOG[0].open("a") as log:
        log.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")


def lines() -> list[dict[str, Any]]:
    """Everything written so far."""
    return [json.loads(line) for line in LOG[0].read_text().splitlines()]


@contextmanager
def recorded(run: JobRun) -> Iterator[None]:
    """The run hook: the job's context variable set, enter and exit (with the error) written."""
    token = CURRENT.set(run.jid)
    write(event="enter", jid=run.jid, klass=run.klass, attempt=run.attempt,
          worker=run.worker, meta=dict(run.metadata))
    try:
        yield
    except BaseException as exc:
        write(event="exit", jid=run.jid, error=type(exc).__name__)
        raise
    else:
        write(event="exit", jid=run.jid, error=None)
    finally:
        CURRENT.reset(token)


@qless_job(name="hooks.sync", takes_job=True)
def sync_job(job: Job, pause: float = 0.0, fail: bool = False) -> None:
    """Sees the hook's context; pauses so concurrent jobs overlap."""
    time.sleep(pause)
    write(event="run", jid=job.jid, seen=CURRENT.get())
    if fail:
        raise ValueError("boom")


@qless_job(name="hooks.async", takes_job=True)
async def async_job(job: Job, pause: float = 0.0, fail: bool = False) -> None:
    """The same, awaited on the worker's event loop."""
    await asyncio.sleep(pause)
    write(event="run", jid=job.jid, seen=CURRENT.get())
    if fail:
        raise ValueError("boom")


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[None]:
    """`recorded` added as a run hook, writing to a fresh file."""
    LOG[:] = [tmp_path / "hooks.jsonl"]
    LOG[0].touch()
    add_run_hook(recorded)
    yield
    remove_run_hook(recorded)


def put(client: Client, klass: str, **kwargs: Any) -> str:
    """A job with metadata, as an enqueue hook would have left it."""
    return client.queue("q").put(klass, {"args": [], "kwargs": kwargs,
                                         META_KEY: {"request_id": "r-7"}})


def by_job(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each job's lines, in the order written."""
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        found.setdefault(entry["jid"], []).append(entry)
    return found


def check_wrapped(jids: dict[str, str | None], worker: Worker) -> list[dict[str, Any]]:
    """Every job entered, ran seeing its own jid, exited with its error; its lines."""
    found = by_job(lines())
    assert set(found) == set(jids)
    for jid, error in jids.items():
        enter, run, exit_ = found[jid]
        assert [enter["event"], run["event"], exit_["event"]] == ["enter", "run", "exit"]
        assert run["seen"] == jid  # the hook's context, this job's alone
        assert exit_["error"] == error
        assert enter["meta"] == {"request_id": "r-7"} and enter["attempt"] == 1
        assert enter["worker"] == worker.name
    return [entry for entries in found.values() for entry in entries]


def test_a_sync_job_is_wrapped_and_its_failure_seen(
    hooked: None, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    ok, bad = put(qless, "hooks.sync"), put(qless, "hooks.sync", fail=True)
    worker = run_worker("q")
    check_wrapped({ok: None, bad: "ValueError"}, worker)
    assert job_state(qless, ok) == "complete" and job_state(qless, bad) == "failed"
    failed = qless.get_job(bad)
    assert failed is not None and failed.failure is not None
    assert failed.failure.group == "q-ValueError"


def test_thread_pool_jobs_each_keep_their_own_context(
    hooked: None, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    jids = {put(qless, "hooks.sync", pause=0.3): None for _ in range(3)}
    bad = put(qless, "hooks.sync", pause=0.3, fail=True)
    worker = run_worker("q", concurrency=4)
    entries = check_wrapped({**jids, bad: "ValueError"}, worker)
    # They overlapped: every job entered before the first one ran.
    order = [entry["event"] for entry in entries]
    assert order.count("enter") == 4
    events = [entry["event"] for entry in lines()]
    assert events[:4] == ["enter"] * 4


def test_an_async_job_of_the_serial_worker_is_wrapped(
    hooked: None, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    ok, bad = put(qless, "hooks.async"), put(qless, "hooks.async", fail=True)
    worker = run_worker("q")
    check_wrapped({ok: None, bad: "ValueError"}, worker)


def test_async_jobs_on_the_loop_each_enter_the_hook_in_their_own_task(
    hooked: None, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    jids = {put(qless, "hooks.async", pause=0.3): None for _ in range(3)}
    bad = put(qless, "hooks.async", pause=0.3, fail=True)
    worker = run_worker("q", concurrency=4)
    check_wrapped({**jids, bad: "ValueError"}, worker)
    # All on the one loop at once: entered together, each read its own jid after.
    assert [entry["event"] for entry in lines()][:4] == ["enter"] * 4
    assert all(job_state(qless, jid) == "complete" for jid in jids)


def test_an_isolated_job_is_wrapped_in_its_child(
    hooked: None, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    ok, bad = put(qless, "hooks.sync"), put(qless, "hooks.sync", fail=True)
    worker = run_worker("q", isolation="process")
    entries = check_wrapped({ok: None, bad: "ValueError"}, worker)
    for jid in (ok, bad):
        pids = {entry["pid"] for entry in entries if entry["jid"] == jid}
        assert len(pids) == 1 and pids != {os.getpid()}  # one child, not the worker
    assert job_state(qless, bad) == "failed"


def test_a_hook_failing_to_enter_is_logged_once_and_the_jobs_run(
    qless: Client, run_worker: Callable[..., Worker], caplog: pytest.LogCaptureFixture,
    settings: Any,
) -> None:
    def unusable(run: JobRun) -> Any:
        raise RuntimeError("no tracer")

    settings.QLESS = {**settings.QLESS, "HOOKS": {"RUN": [unusable]}}
    jids = [put(qless, "worker.noop") for _ in range(3)]
    with caplog.at_level(logging.ERROR, logger="django_qless.hooks"):
        run_worker("q")
    assert [job_state(qless, jid) for jid in jids] == ["complete"] * 3
    logged = [r.getMessage() for r in caplog.records if r.name == "django_qless.hooks"]
    assert len(logged) == 1 and "the job runs without it" in logged[0]
