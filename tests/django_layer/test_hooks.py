"""Enqueue hooks: their metadata is in the job data of every enqueue path, taken at enqueue."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from django_qless.conf import get_settings
from django_qless.connection import get_client
from django_qless.core import Client
from django_qless.exceptions import QlessConfigurationError
from django_qless.hooks import (
    META_KEY,
    PendingJob,
    add_enqueue_hook,
    metadata_of,
    remove_enqueue_hook,
)
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import sweep
from tests.testapp.qless_jobs import CALLS, add

pytestmark = pytest.mark.django_db(transaction=True)

#: The request id of the "request" that enqueues (what a middleware would set).
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                         default=None)
#: Every job an enqueue hook of this module was told of.
SEEN: list[PendingJob] = []


def request_id(job: PendingJob) -> Mapping[str, Any] | None:
    """The hook the docs show: the current request id, if any (declared by dotted path)."""
    SEEN.append(job)
    value = REQUEST_ID.get()
    return None if value is None else {"request_id": value}


@pytest.fixture
def hooked(settings: Any, qless_settings: dict[str, Any]) -> Iterator[None]:
    """`request_id` declared in QLESS["HOOKS"]."""
    SEEN.clear()
    settings.QLESS = {**qless_settings,
                      "HOOKS": {"ENQUEUE": [f"{__name__}.request_id"]}}
    token = REQUEST_ID.set("req-1")
    yield
    REQUEST_ID.reset(token)


def meta(client: Client, jid: str) -> Any:
    """The metadata in a job's data in Redis (None when the key is absent)."""
    job = client.get_job(jid)
    assert job is not None
    return job.data.get(META_KEY)


def test_a_single_and_a_bulk_enqueue_carry_the_entries(hooked: None, qless: Client) -> None:
    jid = add.using(on_commit=False).enqueue(1, 2)
    jids = add.using(on_commit=False).enqueue_many([((n, n), {}) for n in range(3)])
    assert [meta(qless, j) for j in [jid, *jids]] == [{"request_id": "req-1"}] * 4
    # One call per job, each told of its own job before the put.
    assert [job.jid for job in SEEN] == [jid, *jids]
    assert SEEN[0].klass == "tests.testapp.qless_jobs.add" and SEEN[0].queue == "default"
    assert SEEN[0].data == {"args": [1, 2], "kwargs": {}}
    # Every client sees an ordinary key beside the arguments.
    raw = json.loads(qless.redis.hget(f"ql:j:{jid}", "data"))
    assert raw == {"args": [1, 2], "kwargs": {}, "meta": {"request_id": "req-1"}}


def test_on_commit_puts_the_entries_taken_at_enqueue(
    hooked: None, settings: Any, qless: Client
) -> None:
    settings.QLESS = {**settings.QLESS, "OUTBOX": False}
    with transaction.atomic():
        jid = add.enqueue(1, 2)
        REQUEST_ID.set("after-the-enqueue")
        assert qless.get_job(jid) is None
    assert meta(qless, jid) == {"request_id": "req-1"}


def test_the_outbox_row_keeps_the_entries_and_the_sweep_puts_them(
    hooked: None, settings: Any
) -> None:
    good = dict(settings.QLESS)
    settings.QLESS = {**good, "URL": "redis://127.0.0.1:1/0"}  # the put at commit fails
    with transaction.atomic():
        jids = [add.enqueue(1, 2), *add.enqueue_many([((3, 4), {})])]
        rows = list(OutboxEntry.objects.order_by("id"))
        assert [json.loads(row.data)[META_KEY] for row in rows] == [{"request_id": "req-1"}] * 2
    assert OutboxEntry.objects.count() == 2
    settings.QLESS = good
    REQUEST_ID.set("the-sweeper")  # another context: what it would add is never asked
    SEEN.clear()
    OutboxEntry.objects.update(created=timezone.now() - timedelta(seconds=60))
    report = sweep(get_settings().outbox, ["default"])
    assert sorted(report.put) == sorted(jids)
    assert [meta(get_client(), jid) for jid in jids] == [{"request_id": "req-1"}] * 2
    assert SEEN == []


def test_immediate_mode_runs_a_job_with_metadata(hooked: None, settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "IMMEDIATE": True}
    CALLS.clear()
    add.enqueue(2, 3)  # `meta` is no argument: the job runs as before
    assert CALLS == [("add", (2, 3))] and [job.jid for job in SEEN] != []


def test_hooks_added_in_code_run_after_the_declared_ones(hooked: None, qless: Client) -> None:
    def tenant(job: PendingJob) -> dict[str, Any]:
        return {"tenant": "acme", "request_id": "overridden"}

    add_enqueue_hook(tenant)
    add_enqueue_hook(tenant)  # once is enough
    try:
        jid = add.using(on_commit=False).enqueue(1, 2)
    finally:
        remove_enqueue_hook(tenant)
    assert meta(qless, jid) == {"request_id": "overridden", "tenant": "acme"}
    assert meta(qless, add.using(on_commit=False).enqueue(1, 2)) == {"request_id": "req-1"}


@pytest.mark.parametrize("bad", [
    lambda job: {"when": {1, 2}},  # not JSON
    lambda job: {"nan": float("nan")},  # JSON that would not round-trip
    lambda job: {"big": "x" * 2000},  # over MAX_PAYLOAD_BYTES by itself
    lambda job: {"big": "x" * 975},  # within it by itself, over it with the job's data
    lambda job: ["not", "a", "mapping"],
    lambda job: 1 / 0,  # raises
])
def test_a_failing_hook_is_logged_once_and_its_jobs_are_put_without_its_entries(
    bad: Any, hooked: None, settings: Any, qless: Client, caplog: pytest.LogCaptureFixture
) -> None:
    settings.QLESS = {**settings.QLESS, "MAX_PAYLOAD_BYTES": 1000,
                      "HOOKS": {"ENQUEUE": [bad, f"{__name__}.request_id"]}}
    with caplog.at_level(logging.ERROR, logger="django_qless.hooks"):
        jids = [add.using(on_commit=False).enqueue(n, n) for n in range(2)]
        jids += add.using(on_commit=False).enqueue_many([((5, 5), {}), ((6, 6), {})])
        with transaction.atomic():
            outboxed = add.enqueue(7, 7)
            [row] = OutboxEntry.objects.all()
            # Refused before the row is written: only the good hook's entries are in it.
            assert json.loads(row.data)[META_KEY] == {"request_id": "req-1"}
    assert [meta(qless, jid) for jid in [*jids, outboxed]] == [{"request_id": "req-1"}] * 5
    logged = [r for r in caplog.records if r.name == "django_qless.hooks"]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert "enqueue hook" in logged[0].getMessage()
    assert "put without its entries" in logged[0].getMessage()


def test_metadata_of_reads_the_entries_of_job_data() -> None:
    assert metadata_of({"args": [], META_KEY: {"a": 1}}) == {"a": 1}
    assert metadata_of({"args": []}) == {} and metadata_of({META_KEY: "odd"}) == {}


@pytest.mark.parametrize(("hooks", "problem"), [
    ({"ENQUEUE": ["tests.nowhere.hook"]}, "'tests.nowhere.hook' cannot be imported"),
    ({"RUN": ["json"]}, "'json' cannot be imported"),  # not a dotted path to an attribute
    ({"RUN": [f"{__name__}.SEEN"]}, "names a list, not a callable"),
    ({"RUN": [42]}, "must be a dotted path or a callable"),
    ({"ENQUEUE": "tests.one.hook"}, "must be a list of dotted paths"),
    ({"BEFORE": []}, "is not a known key"),
    ([], "must be a dict"),
])
def test_a_bad_hook_declaration_is_a_configuration_error(
    hooks: Any, problem: str, qless_settings: dict[str, Any]
) -> None:
    with override_settings(QLESS={**qless_settings, "HOOKS": hooks}), pytest.raises(
        QlessConfigurationError, match="QLESS\\['HOOKS'\\]"
    ) as caught:
        get_settings()
    assert problem in str(caught.value)


def test_a_declared_path_is_imported_once_per_settings_change(
    qless_settings: dict[str, Any]
) -> None:
    with override_settings(QLESS={**qless_settings, "HOOKS": {
        "ENQUEUE": [f"{__name__}.request_id"], "RUN": [contextlib_nullcontext]}}):
        hooks = get_settings().hooks
    assert hooks.enqueue == (request_id,) and hooks.run == (contextlib_nullcontext,)


def contextlib_nullcontext(run: Any) -> contextlib.nullcontext[None]:
    """A run hook given as a callable rather than a path."""
    return contextlib.nullcontext()
