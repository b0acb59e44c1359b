"""C5, idle side: a worker waiting for work through a network fault still wakes on the next put.

An idle worker sleeps on the `ql:log` pub/sub channel (it does not poll until
`--poll-interval`, 30 s here). A blackhole between it and Redis leaves that connection
half-open: it reads nothing and raises nothing. After the heal, a job put by a client
connected straight to Redis must start within seconds, not at the next poll, because the
worker notices the silent connection (an unanswered PING) and subscribes again, and the
job's completion must not go into a connection left half-open by the fault: at
`--concurrency 16` the reports' kept connection and the pool's idle connections are the
ones at risk: a completion written into one waits for the socket timeout and fails, and
the job runs again after its lease.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import ledger
from tests.faults.checks import AT_EACH_CONCURRENCY, idle, outcome, qless_client, settle, unfinished
from tests.faults.fleet import Fleet
from tests.faults.proxy import CLIENT_OPTIONS, SOCKET_TIMEOUT, FaultProxy
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

LONG_POLL = 30.0
BLACKHOLE = 4.0
#: Pickup after the heal: a sleep slice of the worker, its PING and a new subscription.
PICKUP_BOUND = 5.0


@AT_EACH_CONCURRENCY
def test_an_idle_worker_wakes_on_a_put_after_a_blackhole_heals(
    server: RedisServer, proxy: FaultProxy, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    fleet = fleets(proxy.url, 1, "q", "--poll-interval", str(LONG_POLL),
                   env={"QLESS_FAULTS_OPTIONS": json.dumps(CLIENT_OPTIONS)})
    wait_for(lambda: idle(client), 20, what="the worker idling")
    proxy.blackhole()
    time.sleep(BLACKHOLE)
    proxy.heal()
    healed = time.time()
    time.sleep(0.5)
    jid = client.queue("q").put("faults.work", {"args": [], "kwargs": {}}, jid="after-heal")
    put_at = time.time()
    runs = wait_for(lambda: (found := ledger.starts(ledger.read(fleet.ledger_dir))).get(jid)
                    and found, LONG_POLL + 5, what="the job's start")
    pickup = runs[jid][0].t - put_at
    # The completion follows the start (the figures tell if it never came).
    settle(lambda: unfinished(client, [jid]) == 0, 5)
    result = outcome(client, [jid], fleet)
    logs = fleet.output()
    figures.update(blackhole=BLACKHOLE, poll=LONG_POLL, socket_timeout=SOCKET_TIMEOUT,
                   pickup_after_put=round(pickup, 2), put_after_heal=round(put_at - healed, 2),
                   restarts=fleet.restarts, tracebacks=logs.count("Traceback"),
                   lost=len(result.lost))
    assert pickup < PICKUP_BOUND
    assert result.lost == [] and result.audit.clean
    assert fleet.restarts == 0 and logs.count("Traceback") == 0
