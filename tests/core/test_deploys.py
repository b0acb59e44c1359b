"""Deploy markers: recorded, read back by time range, bounded, bad labels refused."""

from __future__ import annotations

import pytest
from redis import Redis

from django_qless.core import InvalidArgumentError, keys
from django_qless.core.deploys import KEPT, Deploy, deploys_between, mark_deploy


def test_markers_are_read_back_by_time_range(redis_client: Redis) -> None:
    mark_deploy(redis_client, "v1.0", 100.0)
    mark_deploy(redis_client, " v1.1 ", 200.0)
    mark_deploy(redis_client, "v1.2", 300.0)
    assert deploys_between(redis_client, 150, 300) == [Deploy("v1.1", 200.0), Deploy("v1.2", 300.0)]


@pytest.mark.parametrize("label", ["", "   ", "a\nb", "x" * 201])
def test_a_bad_label_is_refused_and_nothing_is_written(redis_client: Redis, label: str) -> None:
    with pytest.raises(InvalidArgumentError):
        mark_deploy(redis_client, label, 1.0)
    assert redis_client.exists(keys.DEPLOYS) == 0


def test_only_the_newest_markers_are_kept(redis_client: Redis) -> None:
    for at in range(KEPT + 5):
        mark_deploy(redis_client, f"v{at}", float(at))
    kept = deploys_between(redis_client, 0, KEPT + 5)
    assert len(kept) == KEPT
    assert kept[0] == Deploy("v5", 5.0)
