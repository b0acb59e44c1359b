"""`enqueue.dispatch`: one `Enqueue` request, sent inline, through the outbox, on commit or now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from django.db import transaction

from django_qless.core import Client
from django_qless.core.submission import PutOptions, Submission
from django_qless.enqueue import dispatch
from django_qless.enqueue.request import Enqueue
from django_qless.outbox import entries
from django_qless.outbox.models import OutboxEntry

pytestmark = pytest.mark.django_db(transaction=True)


class Recorder:
    """The announce and inline callbacks of a request, recording what they are given."""

    def __init__(self) -> None:
        self.announced: list[tuple[list[str], float]] = []
        self.inline: list[str] = []

    def announce(self, submissions: Sequence[Submission], at: float) -> None:
        self.announced.append(([s.jid for s in submissions], at))

    def run(self, submission: Submission) -> None:
        self.inline.append(submission.jid)


def request(recorder: Recorder, *jids: str, inline: bool = True, **fields: Any) -> Enqueue:
    """A request putting klass `app.K` jobs of these jids into queue `q`."""
    options = PutOptions(unique="any")
    return Enqueue(
        connection="default",
        submissions=[Submission(jid, "app.K", "q", "{}", options) for jid in jids],
        announce=recorder.announce, inline=recorder.run if inline else None, **fields,
    )


@pytest.mark.parametrize("many", [False, True])
def test_outside_a_transaction_the_jobs_are_put_now_and_those_created_announced(
    qless: Client, many: bool
) -> None:
    qless.queue("q").put("app.K", {}, jid="old")
    recorder = Recorder()
    before = qless.now()
    dispatch.send(request(recorder, "new", "old", "other", many=many))
    [(jids, at)] = recorder.announced
    assert jids == ["new", "other"]  # "old" existed: left alone, not announced
    assert before <= at <= qless.now()
    assert qless.get_job("new") is not None and recorder.inline == []


def test_immediate_mode_runs_inline_only_a_request_that_has_an_inline_runner(
    settings: Any, qless: Client
) -> None:
    settings.QLESS = {**settings.QLESS, "IMMEDIATE": True}
    recorder = Recorder()
    dispatch.send(request(recorder, "a", "b"))
    assert (recorder.inline, recorder.announced) == (["a", "b"], [])
    # A Django task's request has none: QLESS["IMMEDIATE"] does not apply to it.
    dispatch.send(request(recorder, "c", inline=False))
    assert qless.get_job("c") is not None and recorder.inline == ["a", "b"]


def test_inside_a_transaction_the_rows_wait_for_the_commit(qless: Client) -> None:
    recorder = Recorder()
    with transaction.atomic():
        dispatch.send(request(recorder, "a", "b", many=True, task_backend="tasks"))
        rows = OutboxEntry.objects.order_by("pk")
        assert [(r.jid, r.unique, r.task_backend) for r in rows] == [
            ("a", "any", "tasks"), ("b", "any", "tasks")]
        assert qless.get_job("a") is None
    assert [jids for jids, _ in recorder.announced] == [["a"], ["b"]]
    assert qless.get_job("b") is not None and not OutboxEntry.objects.exists()


def test_on_commit_false_puts_now_even_inside_a_transaction(qless: Client) -> None:
    recorder = Recorder()
    with transaction.atomic():
        dispatch.send(request(recorder, "a", on_commit=False))
        assert qless.get_job("a") is not None
    assert not OutboxEntry.objects.exists()


def test_a_row_keeps_when_its_job_may_run_and_gives_its_put_back() -> None:
    options = PutOptions(delay=30.0, priority=2.0, tags=("t",), retries=1, depends=("d",),
                         tracked=True, unique="active")
    row = entries.row_of(Submission("j", "app.K", "q", '{"args": []}', options), "other",
                         1_000.0)
    assert (row.connection, row.not_before, row.tags, row.depends, row.unique) == (
        "other", 1_030.0, ["t"], ["d"], "active")
    swept = entries.submission_of(row, "any")
    assert swept == Submission("j", "app.K", "q", '{"args": []}', PutOptions(
        not_before=1_030.0, priority=2.0, tags=("t",), retries=1, depends=("d",),
        tracked=True, unique="any"))
    # A time to run from (a task's run_after) is kept as it is; no clock is needed.
    task = PutOptions(not_before=0.0, tags=None)
    row = entries.row_of(Submission("t", "app.T", "q", "{}", task), "default", None, "tasks")
    assert (row.not_before, row.tags, row.depends, row.task_backend) == (0.0, [], [], "tasks")
