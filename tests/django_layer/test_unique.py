"""Unique jobs: `@qless_job(unique=...)` and `.using(unique=...)` put only while absent."""

from __future__ import annotations

from typing import Any

import pytest

from django_qless import qless_job, signals
from django_qless.core import Client
from django_qless.exceptions import InvalidJobError
from tests.testapp.qless_jobs import add

pytestmark = pytest.mark.usefixtures("clean_registry")


def unique_add(a: int, b: int) -> int:
    """A job registered with unique=True in the tests below."""
    return a + b


def register(unique: Any) -> Any:
    """Register `unique_add` with the given unique option."""
    return qless_job(name=f"tests.unique_add.{unique}", unique=unique)(unique_add)


def test_the_same_call_gives_the_same_jid_and_one_job(qless: Client) -> None:
    defn = register(True)
    first = defn.enqueue(1, 2)
    assert defn.enqueue(1, 2) == first
    assert defn.enqueue(2, 1) != first
    assert qless.queue("default").counts().waiting == 2


def test_an_existing_job_is_not_changed_nor_announced(qless: Client) -> None:
    seen: list[str] = []

    def receive(sender: Any, jid: str, **kwargs: Any) -> None:
        seen.append(jid)

    signals.job_enqueued.connect(receive, weak=False)
    try:
        jid = add.using(jid="report-1", unique=True).enqueue(1, 2)
        again = add.using(jid="report-1", unique=True, priority=9, queue="other").enqueue(5, 5)
        assert again == jid
    finally:
        signals.job_enqueued.disconnect(receive)
    job = qless.get_job(jid)
    assert job is not None
    assert (job.queue_name, job.priority, job.data["args"]) == ("default", 0, [1, 2])
    assert seen == [jid]


def test_a_completed_job_is_put_again_unless_the_policy_is_any(qless: Client) -> None:
    for policy, runs_again in ((True, True), ("any", False)):
        jid = queue = f"nightly-{policy}"
        add.using(jid=jid, queue=queue, unique=policy).enqueue(1, 1)
        (job,) = qless.queue(queue).pop()
        job.complete()
        add.using(jid=jid, queue=queue, unique=policy).enqueue(1, 1)
        stored = qless.get_job(jid)
        assert stored is not None
        assert stored.state == ("waiting" if runs_again else "complete")


def test_without_unique_a_jid_is_re_put_as_before(qless: Client) -> None:
    add.using(jid="plain").enqueue(1, 1)
    add.using(jid="plain", queue="other").enqueue(1, 1)
    job = qless.get_job("plain")
    assert job is not None and job.queue_name == "other"


def test_a_bad_unique_value_is_refused_at_registration() -> None:
    with pytest.raises(InvalidJobError, match="unique"):
        register("sometimes")
