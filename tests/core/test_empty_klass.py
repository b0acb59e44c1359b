"""The client refuses an empty klass itself, before anything is written.

The script accepts `klass ""` (as qless-core does, for the Ruby gem's anonymous classes),
so these refusals are the only thing keeping Python callers from writing such jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client, InvalidArgumentError, commands


@pytest.fixture
def seeded(client: Client) -> Client:
    """A database holding a job and a recurring template, so 'unchanged' means something."""
    client.queue("q").put("k", {"a": 1}, jid="existing")
    client.queue("q").recur("k", {}, 60, jid="tmpl")
    return client


def refused(keyspace: Callable[[], Any], call: Callable[[], object]) -> InvalidArgumentError:
    """Run `call`, which must raise InvalidArgumentError and leave every key as it was."""
    before = keyspace()
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert keyspace() == before
    return info.value


def test_put_refuses_an_empty_klass(seeded: Client, keyspace: Callable[[], Any]) -> None:
    error = refused(keyspace, lambda: seeded.queue("q").put("", {}, jid="anon"))
    assert "klass" in str(error)


def test_recur_refuses_an_empty_klass(seeded: Client, keyspace: Callable[[], Any]) -> None:
    error = refused(keyspace, lambda: seeded.queue("q").recur("", {}, 60, jid="anon"))
    assert "klass" in str(error)


def test_recurring_update_refuses_an_empty_klass(
    seeded: Client, keyspace: Callable[[], Any]
) -> None:
    template = seeded.recurring("tmpl")
    assert template is not None
    refused(keyspace, lambda: template.update(klass=""))
    assert seeded.recurring("tmpl").klass == "k"  # type: ignore[union-attr]


def test_put_if_absent_and_put_many_refuse_an_empty_klass(
    seeded: Client, keyspace: Callable[[], Any]
) -> None:
    args = (seeded.worker_name, "q", "anon", "", "{}", 0)
    refused(keyspace, lambda: seeded.put_if_absent(commands.put_if_absent("any", *args)))
    refused(keyspace, lambda: seeded.put_many([
        commands.put(seeded.worker_name, "q", "ok", "k", "{}", 0), commands.put(*args),
    ]))


def test_requeue_of_a_job_another_client_wrote_with_an_empty_klass_is_refused(
    seeded: Client, keyspace: Callable[[], Any]
) -> None:
    seeded.call("put", "ruby", "q", "anon", "", "{}", 0)  # the script itself accepts it
    job = seeded.get_job("anon")
    assert job is not None
    assert job.klass == ""
    refused(keyspace, lambda: job.requeue("other"))
