"""RetryPolicy: which exceptions retry, exponential delays with a cap and bounded jitter."""

from __future__ import annotations

import random
from typing import Any

import pytest

from django_qless.exceptions import InvalidJobError
from django_qless.retry import RetryPolicy


def test_exponential_backoff_without_jitter() -> None:
    policy = RetryPolicy(backoff=2, factor=3, max_delay=100, jitter=0)
    assert [policy.delay_for(n) for n in range(1, 6)] == [2, 6, 18, 54, 100]


def test_huge_attempts_are_capped_not_overflowing() -> None:
    policy = RetryPolicy(backoff=1, factor=10, max_delay=60, jitter=0)
    assert policy.delay_for(10_000) == 60


def test_jitter_stays_within_its_fraction_and_the_cap() -> None:
    policy = RetryPolicy(backoff=10, factor=2, max_delay=35, jitter=0.5, rng=random.Random(7))
    first = [policy.delay_for(1) for _ in range(200)]
    assert min(first) >= 5 and max(first) <= 15
    assert len(set(first)) > 100  # really random, not a constant
    capped = [policy.delay_for(3) for _ in range(200)]  # base 35 (capped from 40)
    assert min(capped) >= 17.5 and max(capped) <= 35


def test_same_seed_same_delays() -> None:
    one = RetryPolicy(rng=random.Random(1))
    two = RetryPolicy(rng=random.Random(1))
    assert [one.delay_for(n) for n in range(1, 5)] == [two.delay_for(n) for n in range(1, 5)]


def test_attempt_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="attempt must be >= 1"):
        RetryPolicy().delay_for(0)


def test_should_retry_follows_retry_on_and_give_up_on() -> None:
    policy = RetryPolicy(retry_on=(OSError, KeyError), give_up_on=(FileNotFoundError,))
    assert policy.should_retry(ConnectionError())
    assert policy.should_retry(KeyError("k"))
    assert not policy.should_retry(FileNotFoundError())
    assert not policy.should_retry(ValueError())


def test_default_retries_any_exception_but_not_base_exceptions() -> None:
    policy = RetryPolicy()
    assert policy.should_retry(RuntimeError())
    assert not policy.should_retry(KeyboardInterrupt())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backoff": -1},
        {"factor": 0.5},
        {"max_delay": float("inf")},
        {"backoff": True},
        {"jitter": 1.5},
        {"jitter": -0.1},
        {"retry_on": ValueError},
        {"retry_on": (ValueError, "KeyError")},
        {"give_up_on": [KeyError]},
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidJobError, match="RetryPolicy"):
        RetryPolicy(**kwargs)
