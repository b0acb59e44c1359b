"""core.templates: list and read recurring templates, apply commands in one watched transaction."""

from __future__ import annotations

import pytest
import redis

from django_qless.core import Client, JobNotFoundError, commands
from django_qless.core.templates import PAGE, Templates
from tests.support import FakeClock


def test_jids_lists_every_queue_across_pages(client: Client) -> None:
    client.queue("a").recur("k", {}, 60, jid="ra")
    for n in range(PAGE + 2):
        client.queue("b").recur("k", {}, 60, jid=f"rb-{n}")
    found = Templates(client).jids()
    assert len(found) == PAGE + 3
    assert set(found) == {"ra", *(f"rb-{n}" for n in range(PAGE + 2))}


def test_read_gives_records_with_their_next_run(client: Client, clock: FakeClock) -> None:
    client.queue("q").recur("k", {"v": 1}, 60, jid="r", offset=30, priority=2, tags=["t"])
    [template] = Templates(client).read(["r", "missing", "r"])
    assert (template.jid, template.klass, template.queue, template.interval) == ("r", "k", "q", 60)
    assert (template.priority, template.tags, template.data) == (2, ("t",), '{"v":1}')
    assert template.next_run == pytest.approx(clock() + 30, abs=1)


def test_read_of_a_template_missing_from_its_recur_set(client: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r")
    client.redis.zrem("ql:q:q-recur", "r")
    [template] = Templates(client).read(["r"])
    assert template.next_run is None


def test_apply_runs_the_commands_in_one_transaction(client: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r")
    templates = Templates(client)
    with templates.watching() as watch:
        watch.add(["r"])
        replies = watch.apply(
            [commands.recur_update("r", [("priority", 4)]), commands.recur_tag("r", ["x"])],
            client.now(),
        )
    assert replies[1] == '["x"]'
    found = client.recurring("r")
    assert found is not None and (found.priority, found.tags) == (4, ("x",))


def test_apply_aborts_when_a_watched_template_changed(client: Client, other: Client) -> None:
    client.queue("q").recur("k", {}, 60, jid="r")
    with Templates(client).watching() as watch:
        watch.add(["r"])
        other.recurring("r").update(priority=9)  # type: ignore[union-attr]
        with pytest.raises(redis.WatchError):
            watch.apply([commands.recur_update("r", [("priority", 1)])], client.now())
    assert client.recurring("r").priority == 9  # type: ignore[union-attr]


def test_apply_raises_the_scripts_error_as_a_typed_exception(client: Client) -> None:
    with Templates(client).watching() as watch:
        with pytest.raises(JobNotFoundError):
            watch.apply([commands.recur_update("gone", [("priority", 1)])], client.now())
