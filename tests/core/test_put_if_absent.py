"""`Client.put_if_absent`: the extension put that leaves an existing job as it is."""

from __future__ import annotations

import pytest

from django_qless.core import Client, InvalidArgumentError, PutOutcome, commands


def build(policy: str, jid: str = "j", queue: str = "q", data: str = "{}") -> commands.Command:
    """A put_if_absent of one job."""
    return commands.put_if_absent(policy, "w", queue, jid, "K", data, 0, priority=2)


def test_an_absent_job_is_created(client: Client) -> None:
    assert client.put_if_absent(build("any")) == PutOutcome("j", True, None)
    job = client.get_job("j")
    assert job is not None and (job.state, job.priority) == ("waiting", 2)


def test_an_existing_job_is_reported_and_left_alone(client: Client) -> None:
    client.put_if_absent(build("any"))
    outcome = client.put_if_absent(build("active", queue="elsewhere", data='{"x": 1}'))
    assert outcome == PutOutcome("j", False, "waiting")
    job = client.get_job("j")
    assert job is not None and (job.queue_name, job.data) == ("q", {})


def test_a_completed_job_blocks_only_the_any_policy(client: Client) -> None:
    client.put_if_absent(build("any"))
    (job,) = client.queue("q").pop()
    job.complete()
    assert client.put_if_absent(build("any")).state == "complete"
    assert client.put_if_absent(build("active")).created
    again = client.get_job("j")
    assert again is not None and again.state == "waiting"


def test_policy_and_arguments_are_checked_before_redis(client: Client) -> None:
    with pytest.raises(InvalidArgumentError, match="policy"):
        commands.put_if_absent("always", "w", "q", "j", "K", "{}")
    with pytest.raises(InvalidArgumentError):
        commands.put_if_absent("any", "w", "q", "", "K", "{}")
    assert client.get_job("j") is None
