"""C3: a Redis that may evict keys makes the worker refuse to start, with a clear message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.faults.checks import compressed_time, put_jobs, qless_client
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

EVICTING = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-ttl")


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("policy", EVICTING)
def test_an_evicting_policy_stops_the_worker_before_any_pop(
    policy: str, processes: str, start_redis: Callable[..., RedisServer],
    fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    server = start_redis("--maxmemory", "100mb", "--maxmemory-policy", policy)
    client = qless_client(server)
    (jid,) = put_jobs(client, 1, lambda n: {})
    fleet = fleets(server.url, 1, "q", *FAST, "--processes", processes, restart=False)
    pid = fleet.pids()[0]
    code = fleet.wait_exit(pid, 20)
    output = fleet.output(pid)
    figures.update(policy=policy, processes=processes, exit_code=code)
    assert code != 0
    assert f"maxmemory-policy is {policy}" in output
    assert "noeviction" in output
    job = client.get_job(jid)
    assert job is not None and job.state == "waiting"  # nothing was popped
    assert client.redis.zcard("ql:workers") == 0


def test_noeviction_starts_and_works(start_redis: Callable[..., RedisServer],
                                     fleets: Callable[..., Fleet],
                                     figures: dict[str, Any]) -> None:
    server = start_redis("--maxmemory", "100mb", "--maxmemory-policy", "noeviction")
    client = qless_client(server)
    compressed_time(client)
    jids = put_jobs(client, 5, lambda n: {})
    fleet = fleets(server.url, 1, "q", *FAST, restart=False)
    wait_for(lambda: all(client.get_job(j).state == "complete" for j in jids),  # type: ignore[union-attr]
             20, what="the jobs")
    figures.update(policy="noeviction", jobs=len(jids), exit_code=None)
    assert fleet.live_pids() == fleet.pids()
