"""C2/C3: a Redis that can lose acknowledged puts is named at start-up, by the probe and by
`check --deploy`; with `QLESS['REQUIRE_DURABLE_REDIS']` the worker refuses it.

Without an AOF (RDB snapshots at most) a killed Redis lost 474 of 952 acknowledged puts
in C2's control run; `appendfsync no` leaves the AOF's syncing to the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.faults.checks import compressed_time, put_jobs, qless_client
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]

#: redis-server arguments of each risky setup, and what the warning says about it.
RISKY = {
    "rdb-only": (("--save", "3600 1", "--appendonly", "no"), "appendonly is no"),
    "fsync-no": (("--appendonly", "yes", "--appendfsync", "no"), "appendfsync is no"),
    "config-renamed": (("--rename-command", "CONFIG", ""), "appendonly is no"),
}
#: Setups that lose no acknowledged put to a killed Redis, and the INFO note each gets.
SAFE = {
    "always": (("--appendonly", "yes", "--appendfsync", "always"), None),
    "everysec": (("--appendonly", "yes", "--appendfsync", "everysec"), "up to about 1 s"),
    "config-renamed-aof": (("--appendonly", "yes", "--rename-command", "CONFIG", ""),
                           "appendfsync unknown"),
}
DURABLE = {"QLESS_FAULTS_REQUIRE_DURABLE": "1"}


def completes(client: Any, jid: str) -> bool:
    """Whether the job is complete."""
    job = client.get_job(jid)
    return job is not None and job.state == "complete"


@pytest.mark.parametrize("setup", RISKY)
def test_a_risky_redis_is_a_warning_or_with_the_setting_a_refusal(
    setup: str, start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    args, said = RISKY[setup]
    server = start_redis(*args)
    client = qless_client(server)
    compressed_time(client)
    refused = fleets(server.url, 1, "q", *FAST, restart=False, env=DURABLE)
    code = refused.wait_exit(refused.pids()[0], 30)
    refusal = [line for line in refused.output().splitlines()
               if said in line and "REQUIRE_DURABLE_REDIS" in line]
    assert client.redis.zcard("ql:workers") == 0
    (jid,) = put_jobs(client, 1, lambda n: {})
    warned = fleets(server.url, 1, "q", *FAST, restart=False)
    wait_for(lambda: completes(client, jid), 30, what="the job on the warning worker")
    warning = [line for line in warned.output().splitlines()
               if " WARNING " in line and said in line]
    figures.update(setup=setup, refused_exit=code, refusal_lines=len(refusal),
                   warning_lines=len(warning))
    assert code == 1
    assert refusal, refused.output()
    assert warning, warned.output()
    assert warned.live_pids() == warned.pids()


@pytest.mark.parametrize("setup", SAFE)
def test_a_durable_redis_starts_without_a_warning(
    setup: str, start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    args, note = SAFE[setup]
    server = start_redis(*args)
    client = qless_client(server)
    compressed_time(client)
    (jid,) = put_jobs(client, 1, lambda n: {})
    fleet = fleets(server.url, 1, "q", *FAST, restart=False, env=DURABLE)
    wait_for(lambda: completes(client, jid), 30, what="the job")
    lines = [line for line in fleet.output().splitlines() if "Redis persistence" in line]
    figures.update(setup=setup, persistence_lines=len(lines),
                   note=bool(note and any(note in line for line in lines)))
    assert not any(" WARNING " in line for line in lines), lines
    if note is None:
        assert lines == []
    else:
        assert any(" INFO " in line and note in line for line in lines), lines


@pytest.mark.parametrize("setup", [*RISKY, "always"])
def test_the_probe_and_the_deploy_check_name_the_risk(
    setup: str, start_redis: Callable[..., RedisServer], settings: Any,
    figures: dict[str, Any],
) -> None:
    args, said = RISKY.get(setup, (SAFE["always"][0], None))
    server = start_redis(*args)
    qless_client(server).redis.zadd("ql:workers", {"w1": 2_000_000_000})  # seen "now"
    settings.QLESS = {"URL": server.url}
    warned = run_checks(include_deployment_checks=True, tags=["django_qless"])
    err = StringIO()
    call_command("qless_health", "w1", "--max-age", "1e9", stdout=StringIO(), stderr=err)
    settings.QLESS = {"URL": server.url, "REQUIRE_DURABLE_REDIS": True}
    errors = run_checks(include_deployment_checks=True, tags=["django_qless"])
    try:
        call_command("qless_health", "w1", "--max-age", "1e9", stdout=StringIO(),
                     stderr=StringIO())
        probe = ""
    except CommandError as exc:
        probe = str(exc)
    figures.update(setup=setup, deploy_ids=",".join(m.id or "" for m in warned + errors),
                   probe_failed=bool(probe))
    if said is None:
        assert warned == errors == []
        assert err.getvalue() == "" and probe == ""
        return
    assert [(m.id, said in m.msg) for m in warned] == [("django_qless.W004", True)]
    assert [(m.id, said in m.msg) for m in errors] == [("django_qless.E050", True)]
    assert said in err.getvalue()
    assert said in probe and "REQUIRE_DURABLE_REDIS" in probe
