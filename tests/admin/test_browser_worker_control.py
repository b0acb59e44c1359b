"""In a real browser: pause a running worker from its page, resume it, then stop it.

The worker is a real `qless_worker` (in a thread of the live server's process): the page's
buttons reach it through its control channel, and its presence shows the pause.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client, control
from django_qless.core.presence import listed
from tests.admin.conftest import ALL_PERMS, KLASS, url
from tests.admin.test_browser import CHROMIUM, browser_page, images, log_in, shoot
from tests.support import wait_for

__all__ = ["browser_page", "images"]  # fixtures, used by name

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)"),
    pytest.mark.django_db(transaction=True, databases="__all__"),  # the worker sweeps all
    pytest.mark.slow,
]


def state(qless: Client, jid: str) -> str | None:
    """The job's state (None once gone)."""
    job = qless.get_job(jid)
    return None if job is None else job.state


def test_pause_resume_and_stop_a_worker_from_its_page(
    live_server: Any, make_user: Callable[..., User], qless: Client, browser_page: Any,
    images: Path,
) -> None:
    worker = threading.Thread(target=call_command, args=("qless_worker", "ctl"),
                              kwargs={"verbosity": 0}, daemon=True)
    worker.start()
    name = wait_for(lambda: next((e.name for e in listed(qless) if e.presence), None),
                    timeout=20, what="the worker to report")
    try:
        make_user("ops", perms=ALL_PERMS)
        page, base = browser_page, live_server.url
        log_in(page, base)
        page.goto(base + url("worker", name=name))
        buttons = page.get_by_role("group", name="Control this worker")
        buttons.get_by_role("button", name="Pause").click()
        assert f"Asked worker {name} to pause" in page.locator(".messagelist").inner_text()
        wait_for(lambda: page.reload() and "paused by ops" in page.locator(
            ".qless-worker-process").inner_text(), timeout=10, every=0.3)
        jid = qless.queue("ctl").put(KLASS, {"args": [1, 2], "kwargs": {}})
        page.wait_for_timeout(1500)
        assert state(qless, jid) == "waiting"
        shoot(page, images, "worker-paused")

        buttons.get_by_role("button", name="Resume").click()
        assert f"Asked worker {name} to resume" in page.locator(".messagelist").inner_text()
        wait_for(lambda: state(qless, jid) != "waiting", timeout=10)

        buttons.get_by_role("button", name="Stop…").click()
        assert f"Stop worker {name}?" in page.locator(".qless-confirm").inner_text()
        page.get_by_role("button", name="Yes, I’m sure").click()
        assert f"Asked worker {name} to stop" in page.locator(".messagelist").inner_text()
        worker.join(timeout=15)
        assert not worker.is_alive()
        assert [entry.action for entry in AuditEntry.objects.order_by("id")] == [
            "worker_pause", "worker_resume", "worker_stop"]
    finally:
        if worker.is_alive():
            control.send(qless, name, control.STOP, "cleanup")
            worker.join(timeout=15)
