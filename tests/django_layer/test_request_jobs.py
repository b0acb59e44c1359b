"""Recording a request's enqueues: only while a recording is active, and only its own jobs."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from django_qless import signals
from django_qless.core import Client
from django_qless.core.submission import Submission
from django_qless.enqueue import observers
from django_qless.enqueue.request import Enqueue
from django_qless.integrations import request_jobs
from tests.testapp.qless_jobs import add

ROOT = Path(__file__).resolve().parents[2]


def test_nothing_listens_outside_a_recording(qless: Client) -> None:
    receivers = len(signals.job_enqueued.receivers)
    with request_jobs.recording(), request_jobs.recording() as inner:
        assert len(observers.LISTENERS) == 1
        add.enqueue(1, 2)
    assert observers.LISTENERS == []
    assert len(signals.job_enqueued.receivers) == receivers
    assert len(inner.jobs) == 1


def test_a_recording_sees_only_the_jobs_of_its_own_context(qless: Client) -> None:
    elsewhere: list[str] = []
    with request_jobs.recording() as record:
        mine = add.enqueue(1, 1)
        thread = threading.Thread(target=lambda: elsewhere.append(add.enqueue(2, 2)))
        thread.start()
        thread.join()
    assert [job.jid for job in record.jobs] == [mine]
    assert record.jobs[0].put_at is not None
    assert qless.get_job(elsewhere[0]) is not None


def test_a_large_bulk_is_counted_beyond_the_limit(
    qless: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(request_jobs, "MAX_JOBS", 2)
    with request_jobs.recording() as record:
        jids = add.enqueue_many([((i, i), {}) for i in range(3)])
    assert [job.jid for job in record.jobs] == jids[:2]
    assert record.omitted == 1
    assert {job.bulk for job in record.jobs} == {3}


def test_django_tasks_are_left_to_the_tasks_panel() -> None:
    submission = Submission("a" * 32, "some.task", "default", "{}")
    task = Enqueue("default", [submission], lambda jobs, at: None, task_backend="default")
    with request_jobs.recording() as record:
        observers.dispatched(task, "now")
        observers.dispatched(Enqueue("default", [submission], lambda jobs, at: None), "now")
    assert [job.klass for job in record.jobs] == ["some.task"]


def test_a_failing_listener_is_logged_and_the_job_still_put(
    qless: Client, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: Enqueue, route: Any) -> None:
        raise RuntimeError("listener bug")

    monkeypatch.setattr(observers, "LISTENERS", [broken])
    with caplog.at_level(logging.ERROR, logger="django_qless"):
        jid = add.enqueue(1, 2)
    assert qless.get_job(jid) is not None
    assert "enqueue listener" in caplog.text and "listener bug" in caplog.text


def test_the_app_never_imports_the_toolbar() -> None:
    code = (
        "import sys, django\n"
        "django.setup()\n"
        "import django_qless.definitions, django_qless.integrations.request_jobs\n"
        "from django_qless.enqueue import observers\n"
        "print(sorted(m for m in sys.modules if m.startswith('debug_toolbar')),"
        " observers.LISTENERS)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=False, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] []"
