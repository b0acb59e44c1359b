"""`core.submission`: a put as one value, the one builder of its commands, and `submit`."""

from __future__ import annotations

import pytest
import redis

from django_qless.core import Client, InvalidArgumentError, PutOutcome, commands
from django_qless.core.submission import PutOptions, Submission, put_commands, submit


def job(jid: str = "j1", data: str = "{}", **options: object) -> Submission:
    """A submission of klass `app.K` into queue `q`."""
    return Submission(jid, "app.K", "q", data, PutOptions(**options))  # type: ignore[arg-type]


def test_options_become_the_exact_put_arguments() -> None:
    submission = job(delay=5.0, priority=3, tags=("a", "b"), retries=2, depends=("d1",))
    assert put_commands([submission], "w") == [commands.Command("put", (
        "w", "q", "j1", "app.K", "{}", 5.0, "priority", 3, "tags", '["a", "b"]',
        "retries", 2, "depends", '["d1"]',
    ))]


def test_options_left_as_none_are_left_out_and_empty_ones_are_sent() -> None:
    # None keeps an existing job's value on a re-put; an empty tuple replaces it.
    assert put_commands([job()], "w")[0].args == ("w", "q", "j1", "app.K", "{}", 0.0)
    assert put_commands([job(tags=(), depends=())], "w")[0].args[6:] == (
        "tags", "[]", "depends", "[]")


def test_a_unique_submission_is_a_put_if_absent_with_its_policy_first() -> None:
    [command] = put_commands([job(unique="any", priority=1)], "w")
    assert command == commands.Command("put.ifabsent", (
        "any", "w", "q", "j1", "app.K", "{}", 0.0, "priority", 1))


def test_not_before_counts_the_delay_from_the_put_never_below_zero() -> None:
    assert put_commands([job(not_before=1_000.0)], "w", now=990.0)[0].args[5] == 10.0
    assert put_commands([job(not_before=1_000.0)], "w", now=1_010.0)[0].args[5] == 0.0
    with pytest.raises(ValueError, match="clock"):
        put_commands([job(not_before=1_000.0)], "w")


def test_jobs_sharing_a_put_are_built_as_each_would_be_alone() -> None:
    options = PutOptions(delay=1.0, tags=("t",), unique="active", tracked=True)
    first = Submission("j1", "app.K", "q", '{"args": [1]}', options)
    others = [first.with_job(f"j{n}", f'{{"args": [{n}]}}') for n in range(2, 5)]
    built = put_commands([first, *others], "w")
    assert built == [put_commands([s], "w")[0] for s in [first, *others]]
    assert [c.args[3] for c in built] == ["j1", "j2", "j3", "j4"]


@pytest.mark.parametrize(("options", "message"), [
    ({"tags": ("ok", "")}, "tag"),
    ({"retries": -1}, "retries"),
    ({"priority": float("nan")}, "priority"),
    ({"delay": -1.0}, "delay"),
    ({"unique": "sometimes"}, "policy"),
    ({"depends": ("not a jid!",)}, "jid"),
])
def test_an_invalid_option_is_refused_before_any_write(
    client: Client, redis_client: redis.Redis, options: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        submit(client, [job("good"), job("bad", **options)])
    assert client.get_job("good") is None
    assert redis_client.dbsize() == 0


def test_a_bad_jid_among_shared_puts_is_refused_before_any_write(
    client: Client, redis_client: redis.Redis
) -> None:
    first = job("j1")
    with pytest.raises(InvalidArgumentError, match="jid"):
        submit(client, [first, first.with_job("bad jid!", "{}")], pipelined=True)
    assert client.get_job("j1") is None
    assert redis_client.dbsize() == 0


@pytest.mark.parametrize("pipelined", [False, True])
def test_submit_puts_tracks_and_reports_each_job(client: Client, pipelined: bool) -> None:
    client.queue("q").put("app.K", {}, jid="old")
    outcomes = submit(client, [
        job("new", tracked=True, unique="any"), job("old", tracked=True, unique="any"),
        job("plain", priority=7),
    ], pipelined=pipelined)
    assert outcomes == [PutOutcome("new", True, None), PutOutcome("old", False, "waiting"),
                        PutOutcome("plain", True, None)]
    # Only the job created is tracked: an existing one is left exactly as it was.
    assert [j.jid for j in client.tracked().jobs] == ["new"]
    plain = client.get_job("plain")
    assert plain is not None and plain.priority == 7
