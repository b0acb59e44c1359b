"""A running worker publishes its presence (current job, counts) and withdraws it on exit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django_qless.core import Client
from django_qless.core.presence import Listed, listed
from django_qless.worker import Worker


def wait_for(check: Callable[[], Listed | None], timeout: float = 10.0) -> Listed:
    """Poll until `check` returns an entry."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError("no matching presence within the timeout")


def test_a_worker_publishes_its_job_and_withdraws_on_exit(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.fail")
    busy = put("worker.sleep", 1.5)
    thread = threading.Thread(target=run_worker, args=("q",), daemon=True)
    thread.start()

    def running() -> Listed | None:
        for entry in listed(qless):
            if entry.presence is not None and entry.presence.running:
                return entry
        return None

    entry = wait_for(running)
    presence = entry.presence
    assert presence is not None
    assert [(job.jid, job.klass) for job in presence.running] == [(busy, "worker.sleep")]
    assert presence.queues == ("q",) and presence.failed == 1 and presence.done == 0
    assert presence.rss_bytes > 10_000_000 and presence.pid > 0
    assert [(k.klass, k.done, k.failed) for k in presence.klasses] == [("worker.fail", 0, 1)]
    assert dict(presence.settings)["strategy"] and "isolation" in dict(presence.settings)
    assert presence.cpu_seconds > 0 and presence.load >= 0
    thread.join(timeout=20)
    assert not thread.is_alive()
    assert listed(qless) == []  # withdrawn at shutdown, not left to expire
