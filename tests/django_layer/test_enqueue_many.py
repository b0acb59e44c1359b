"""`enqueue_many`: validated as a whole before any write, then put in few round trips."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from django_qless import signals
from django_qless.core import (
    Client,
    DependencyError,
    JobDataError,
    PartialPutError,
    ScriptArgumentError,
    commands,
)
from django_qless.core import put_many as put_many_module
from django_qless.enqueue.calls import note_position
from django_qless.exceptions import InvalidJobError
from django_qless.outbox.models import OutboxEntry
from tests.django_layer.test_outbox import UNREACHABLE, age_rows, back_up, sweep_now
from tests.testapp.qless_jobs import CALLS, add, echo, send_welcome

pytestmark = [pytest.mark.usefixtures("clean_registry"), pytest.mark.django_db(transaction=True)]

#: Hash fields that differ between two puts of the same call (the jid, the clock).
PER_PUT = {"jid", "time"}


class RollbackError(Exception):
    """Raised to roll a transaction back."""


@pytest.fixture
def enqueued() -> Iterator[list[dict[str, Any]]]:
    """Every `job_enqueued` sent during the test."""
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append({"sender": sender, **kwargs})

    signals.job_enqueued.connect(receiver)
    yield sent
    signals.job_enqueued.disconnect(receiver)


def shared_fields(client: Client, jid: str) -> dict[str, str]:
    """A job's hash without the fields every put makes its own."""
    fields: dict[bytes, bytes] = client.redis.hgetall(f"ql:j:{jid}")
    return {k.decode(): v.decode() for k, v in fields.items() if k.decode() not in PER_PUT}


def test_jobs_are_put_in_order_and_their_jids_returned(qless: Client) -> None:
    jids = add.enqueue_many([((i, i), {}) for i in range(2500)])  # three round trips
    assert len(jids) == len(set(jids)) == 2500
    assert [job.data["args"] for job in qless.get_jobs(jids)] == [[i, i] for i in range(2500)]
    # In the queue (same priority) in put order: the order of the calls.
    assert [job.jid for job in qless.queue("default").peek(1000)] == jids[:1000]


def test_a_bulk_put_writes_what_single_puts_write(qless: Client, enqueued: list[Any]) -> None:
    [single] = [send_welcome.enqueue(7, template="t")]
    [bulk] = send_welcome.enqueue_many([((7,), {"template": "t"})])
    assert shared_fields(qless, bulk) == shared_fields(qless, single)
    assert qless.redis.lrange(f"ql:j:{bulk}-history", 0, -1)[0][-20:] == qless.redis.lrange(
        f"ql:j:{single}-history", 0, -1)[0][-20:]
    assert [sent["jid"] for sent in enqueued] == [single, bulk]
    first, second = ({k: v for k, v in sent.items() if k != "jid"} for sent in enqueued)
    assert first == second
    assert first["tags"] == ("mail", "welcome") and first["immediate"] is False


def test_an_empty_iterable_puts_nothing(qless: Client, keyspace: Any) -> None:
    assert add.enqueue_many([]) == []
    assert add.enqueue_many(iter(())) == []
    assert keyspace() == {}


@pytest.mark.parametrize(("bad", "error", "match"), [
    (((1,), {}), TypeError, "missing a required argument: 'b'"),
    (((1, {1: "int key"}), {}), JobDataError, "keys must be strings"),
    (((1, float("nan")), {}), JobDataError, "not JSON-serialisable"),
    (((1, 2, 3), {}), TypeError, "too many positional arguments"),
    ((1, 2), InvalidJobError, "args must be a list or tuple"),
    (((1, 2), [1]), InvalidJobError, "kwargs must be a dict"),
    ("12", InvalidJobError, r"\(args, kwargs\) pair"),
])
def test_a_bad_call_in_the_middle_writes_nothing(
    qless: Client, keyspace: Any, enqueued: list[Any], bad: Any, error: type[Exception],
    match: str,
) -> None:
    calls: list[Any] = [((i, i), {}) for i in range(10)]
    calls.insert(5, bad)
    with pytest.raises(error, match=match) as raised:
        add.enqueue_many(calls)
    assert any("call #5; nothing was enqueued" in note for note in raised.value.__notes__)
    assert keyspace() == {}
    assert enqueued == []


def test_a_fixed_jid_is_refused(qless: Client, keyspace: Any) -> None:
    with pytest.raises(InvalidJobError, match="one jid per job"):
        add.using(jid="fixed").enqueue_many([((1, 2), {})])
    assert keyspace() == {}


def test_a_refused_put_names_what_was_written(qless: Client) -> None:
    # A job may not depend on itself: the script refuses that one put; the others of its
    # round trip are written.
    with pytest.raises(PartialPutError, match=r"1 of 3 commands were refused \(first, #1") as err:
        qless.put_many([qless_put(qless, "a"), qless_put(qless, "c", depends=["c"]),
                        qless_put(qless, "d")])
    assert err.value.replies[0] == "a" and err.value.replies[2] == "d"
    assert isinstance(err.value.errors[1], DependencyError)
    assert qless.get_job("a") is not None and qless.get_job("c") is None


def qless_put(client: Client, jid: str, **options: Any) -> Any:
    """A plain put command of a no-argument job."""
    return commands.put(client.worker_name, "default", jid, "k", '{"args":[],"kwargs":{}}', 0,
                        **options)


def test_unique_jobs_are_put_only_if_absent(qless: Client, enqueued: list[Any]) -> None:
    unique = add.using(unique=True)
    first = unique.enqueue(1, 1)
    jids = unique.enqueue_many([((1, 1), {}), ((2, 2), {}), ((2, 2), {})])
    assert jids[0] == first and jids[1] == jids[2] != first
    assert [sent["jid"] for sent in enqueued] == [first, jids[1]]  # only the jobs written
    assert len(qless.redis.lrange(f"ql:j:{first}-history", 0, -1)) == 1


def test_tracked_jobs_are_tracked(qless: Client) -> None:
    jids = add.using(tracked=True).enqueue_many([((1, 1), {}), ((2, 2), {})])
    assert sorted(qless.tracked_jids()) == sorted(jids)


def test_group_and_round_trip_boundaries_change_nothing(qless: Client, monkeypatch: Any) -> None:
    monkeypatch.setattr(put_many_module, "CHUNK", 5)
    monkeypatch.setattr(put_many_module, "GROUP", 3)
    jids = add.enqueue_many([((i, 0), {}) for i in range(11)])
    assert [job.data["args"][0] for job in qless.get_jobs(jids)] == list(range(11))
    assert [job.jid for job in qless.queue("default").peek(11)] == jids


def test_a_refused_put_many_writes_none_of_its_puts(qless: Client, keyspace: Any) -> None:
    # Data is checked by the callers of `commands.put`: here the script refuses it.
    bad = commands.put(qless.worker_name, "default", "b", "k", "{not json", 0)
    with pytest.raises(PartialPutError, match=r"3 of 3 commands were refused") as err:
        qless.put_many([qless_put(qless, "a"), bad, qless_put(qless, "c")])
    assert all(isinstance(reply, ScriptArgumentError) for reply in err.value.replies)
    assert keyspace() == {}


def test_inside_a_transaction_a_rollback_puts_nothing(qless: Client, keyspace: Any) -> None:
    with pytest.raises(RollbackError), transaction.atomic():
        add.enqueue_many([((i, i), {}) for i in range(5)])
        assert OutboxEntry.objects.count() == 5  # the rows, in the transaction
        raise RollbackError
    assert keyspace() == {}
    assert OutboxEntry.objects.count() == 0


def test_inside_a_transaction_the_commit_puts_all(
    qless: Client, keyspace: Any, enqueued: list[Any]
) -> None:
    with transaction.atomic():
        jids = add.enqueue_many([((i, i), {}) for i in range(5)])
        assert keyspace() == {}
        assert enqueued == []
    assert [job.jid for job in qless.get_jobs(jids)] == jids
    assert [sent["jid"] for sent in enqueued] == jids
    assert OutboxEntry.objects.count() == 0  # every row deleted once its job was put


def test_inside_a_transaction_unique_and_tracked_follow_single_puts(qless: Client) -> None:
    existing = add.using(unique="any").enqueue(1, 1)
    with transaction.atomic():
        jids = add.using(unique="any", tracked=True).enqueue_many([((1, 1), {}), ((3, 3), {})])
    assert jids[0] == existing
    assert qless.tracked_jids() == [jids[1]]  # the existing job was left as it was
    assert OutboxEntry.objects.count() == 0


def test_outbox_off_puts_all_at_commit(
    qless: Client, settings: Any, qless_settings: dict[str, Any], keyspace: Any
) -> None:
    settings.QLESS = {**qless_settings, "OUTBOX": False}
    with transaction.atomic():
        jids = add.enqueue_many([((i, i), {}) for i in range(3)])
        assert keyspace() == {}
        assert OutboxEntry.objects.count() == 0
    assert len(get_jobs(jids)) == 3


def get_jobs(jids: list[str]) -> list[Any]:
    """The jobs of the default connection (after settings changed)."""
    from django_qless.connection import get_client  # noqa: PLC0415

    return get_client().get_jobs(jids)


def test_immediate_mode_runs_each_call_in_order(
    settings: Any, qless_settings: dict[str, Any], keyspace: Any
) -> None:
    settings.QLESS = {**qless_settings, "IMMEDIATE": True}
    CALLS.clear()
    add.enqueue_many([((1, 2), {}), ((3, 4), {})])
    assert CALLS == [("add", (1, 2)), ("add", (3, 4))]
    assert keyspace() == {}


def test_keyword_arguments_and_takes_job(qless: Client) -> None:
    jids = send_welcome.enqueue_many([((1,), {"template": "t"}), ([2], {})])
    assert [job.data for job in qless.get_jobs(jids)] == [
        {"args": [1], "kwargs": {"template": "t"}}, {"args": [2], "kwargs": {}}]
    [jid] = echo.enqueue_many([(({"a": 1},), {})])  # the job parameter is not passed
    assert qless.get_jobs([jid])[0].data == {"args": [{"a": 1}], "kwargs": {}}


def test_inside_a_transaction_a_jid_given_twice_is_one_row_and_one_job(
    qless: Client, enqueued: list[Any]
) -> None:
    unique = add.using(unique=True)
    with transaction.atomic():
        first = unique.enqueue(5, 5)  # a row of this jid exists before the bulk's
        jids = unique.enqueue_many([((5, 5), {}), ((6, 6), {}), ((6, 6), {})])
        assert OutboxEntry.objects.count() == 2  # rows of one jid rewritten, not added
    assert jids[0] == first and jids[1] == jids[2]
    assert sorted(job.jid for job in qless.get_jobs([first, jids[1]])) == sorted(
        [first, jids[1]])
    assert sorted(sent["jid"] for sent in enqueued) == sorted([first, jids[1]])
    assert OutboxEntry.objects.count() == 0


def test_redis_down_at_commit_keeps_the_rows_for_the_sweep(
    settings: Any, qless_url: str, enqueued: list[Any], caplog: pytest.LogCaptureFixture,
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    after: list[str] = []
    with caplog.at_level(logging.WARNING, logger="django_qless.outbox"), transaction.atomic():
        jids = add.enqueue_many([((n, n), {}) for n in range(3)])
        transaction.on_commit(lambda: after.append("ran"))
    assert sorted(OutboxEntry.objects.values_list("jid", flat=True)) == sorted(jids)
    assert after == ["ran"] and enqueued == []
    assert any("3 jobs of tests.testapp.qless_jobs.add not all put at commit" in r.getMessage()
               for r in caplog.records)
    back_up(settings, qless_url)
    age_rows()
    assert sorted(sweep_now().put) == sorted(jids)
    assert sorted(sent["jid"] for sent in enqueued) == sorted(jids)
    assert OutboxEntry.objects.count() == 0


def test_a_bad_calls_position_is_noted_where_exceptions_have_no_add_note() -> None:
    class OldStyleError(Exception):
        """An exception as Python 3.10 makes them: no add_note."""

        def __getattribute__(self, name: str) -> object:
            if name == "add_note":
                raise AttributeError(name)
            return super().__getattribute__(name)

    error = OldStyleError("bad")
    note_position(error, "call #1")
    note_position(error, "call #2")
    assert error.__notes__ == ["call #1", "call #2"]
