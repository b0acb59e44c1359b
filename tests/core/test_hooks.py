"""The core of the hooks: metadata spliced into job data, run hooks entered and exited."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from django_qless.core import Client, hooks
from django_qless.core.hooks import META_KEY, JobRun, PendingJob
from django_qless.core.metadata import with_meta, with_metadata
from django_qless.core.submission import Submission, submit


@pytest.fixture
def enqueue_hook() -> Iterator[list[Any]]:
    """An added enqueue hook returning what the test appends (its calls recorded)."""
    returns: list[Any] = []
    calls: list[PendingJob] = []

    def hook(job: PendingJob) -> Any:
        calls.append(job)
        return returns[0]

    hooks.add_enqueue_hook(hook)
    yield returns
    hooks.remove_enqueue_hook(hook)


def test_without_hooks_the_same_submissions_come_back() -> None:
    submissions = [Submission("a" * 32, "k", "q", '{"args":[]}')]
    assert with_metadata(submissions, 100) is submissions


def test_entries_are_spliced_in_and_put(client: Client, enqueue_hook: list[Any]) -> None:
    enqueue_hook.append({"request_id": "r-1", "n": [1, 2]})
    [submission] = with_metadata([Submission("a" * 32, "k", "q", '{"args":[1]}')], 1000)
    assert json.loads(submission.data) == {"args": [1], META_KEY: {"request_id": "r-1",
                                                                    "n": [1, 2]}}
    submit(client, [submission])
    job = client.get_job("a" * 32)
    assert job is not None and job.data[META_KEY] == {"request_id": "r-1", "n": [1, 2]}


@pytest.mark.parametrize(("data", "expected"), [
    ("{}", {META_KEY: {"a": 1}}),
    ('{"x":"\\"meta\\""}', {"x": '"meta"', META_KEY: {"a": 1}}),  # the key only in a value
    ('{"meta":{"b":2,"a":0}}', {META_KEY: {"b": 2, "a": 1}}),  # merged, the hook's wins
    ('{"args":[],"kwargs":{"meta":1}}', {"args": [], "kwargs": {"meta": 1},
                                          META_KEY: {"a": 1}}),
])
def test_with_meta_keeps_the_data_and_merges_into_existing_metadata(
    data: str, expected: dict[str, Any]
) -> None:
    assert json.loads(with_meta(data, {"a": 1}, 1000)) == expected


def test_metadata_that_is_not_an_object_cannot_be_merged() -> None:
    with pytest.raises(Exception, match="not an object"):
        with_meta('{"meta":"text"}', {"a": 1}, 1000)


def test_the_size_limit_counts_the_whole_data() -> None:
    data = '{"args":["' + "x" * 80 + '"]}'
    assert len(with_meta(data, {"a": "y" * 10}, 200)) < 200
    with pytest.raises(Exception, match="the limit is 100"):
        with_meta(data, {"a": "y" * 10}, 100)


def run_of(client: Client) -> JobRun:
    """A popped job's view, as a run hook gets it."""
    client.queue("q").put("k", {"args": [], META_KEY: {"t": 1}}, jid="b" * 32, retries=3)
    [job] = client.queue("q").pop()
    return JobRun(job, client.worker_name)


def test_the_run_view_names_the_job(client: Client) -> None:
    run = run_of(client)
    assert (run.jid, run.klass, run.queue, run.worker) == ("b" * 32, "k", "q", "worker-1")
    assert (run.attempt, run.retries, run.remaining) == (1, 3, 3)
    assert run.metadata == {"t": 1} and run.data["args"] == []


def test_run_hooks_nest_and_each_sees_the_jobs_exception(client: Client) -> None:
    run = run_of(client)
    seen: list[tuple[str, str | None]] = []

    def hook(name: str) -> Any:
        @contextmanager
        def around(job: JobRun) -> Iterator[None]:
            seen.append((f"enter {name}", job.jid))
            try:
                yield
            except ValueError as exc:
                seen.append((f"exit {name}", str(exc)))
                raise

        return around

    with pytest.raises(ValueError, match="boom"), hooks.Running((hook("a"), hook("b")), run):
        raise ValueError("boom")
    assert seen == [("enter a", run.jid), ("enter b", run.jid), ("exit b", "boom"),
                    ("exit a", "boom")]


class Swallowing:
    """A run hook's manager whose __exit__ answers True (would swallow the failure)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def test_a_hook_cannot_swallow_the_jobs_failure(client: Client) -> None:
    with pytest.raises(ValueError, match="kept"), hooks.Running(
        (lambda job: Swallowing(),), run_of(client)
    ):
        raise ValueError("kept")


def test_failures_in_enter_and_exit_are_logged_once_and_the_job_goes_on(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    run = run_of(client)

    def broken_enter(job: JobRun) -> Any:
        raise RuntimeError("enter")

    @contextmanager
    def broken_exit(job: JobRun) -> Iterator[None]:
        yield
        raise RuntimeError("exit")

    ran = []
    with caplog.at_level(logging.ERROR, logger="django_qless.hooks"):
        for _ in range(3):
            with hooks.Running((broken_enter, broken_exit), run):
                ran.append(1)
        with pytest.raises(KeyError), hooks.Running((broken_exit,), run):
            raise KeyError("the job's own")
    assert ran == [1, 1, 1]
    messages = [r.getMessage() for r in caplog.records if r.name == "django_qless.hooks"]
    assert len(messages) == 2, messages
    assert "broken_enter failed (RuntimeError: enter); the job runs without it" in messages[0]
    assert "broken_exit failed (RuntimeError: exit); the job's outcome stands" in messages[1]


def test_running_without_hooks_enters_nothing(client: Client) -> None:
    assert hooks.running(run_of(client).job, "w") is hooks.NO_HOOK
