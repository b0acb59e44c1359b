"""The workers page: our workers' presence, other clients' workers, and who may be forgotten."""

from __future__ import annotations

import time
from dataclasses import replace

from django.test import Client as HttpClient

from django_qless.core import Client
from django_qless.core.presence import KlassCount, Presence, RunningJob, listed, publish
from tests.admin.conftest import World, messages_of, post, url


def presence(name: str, now: float, seen: float | None = None) -> Presence:
    """A presence of one of our workers, running one job."""
    return Presence(
        name=name, host="web-7", pid=31337, version="9.9.9", queues=("busy", "mail"),
        started=now - 3600, seen=now if seen is None else seen, done=1234, failed=5,
        rss_bytes=150 * 1024 * 1024,
        running=(RunningJob("jid-running-now", "app.jobs.render_invoice", now - 42),),
    )


def test_live_worker_shows_what_it_publishes(qless: Client, operator: HttpClient) -> None:
    publish(qless, presence("ours-1", qless.now()), ttl=30)
    page = operator.get(url("workers")).content.decode()
    for text in ("ours-1", "web-7 / 31337", "v9.9.9", "app.jobs.render_invoice",
                 "jid-running-now", "for 42 s", "1234", "150.0\xa0MB", "1 h", "reporting"):
        assert text in page, text
    assert "Forget</button>" not in page


def test_silent_and_other_client_workers_are_flagged(
    world: World, qless: Client, operator: HttpClient
) -> None:
    now = qless.now()
    publish(qless, presence("ours-gone", now - 120, seen=now - 120), ttl=0.05)
    time.sleep(0.1)
    qless.redis.zadd("ql:workers", {"ruby-host-42": now - 7200})
    page = operator.get(url("workers")).content.decode()
    rows = {name: page[page.index(f">{name}<"):][:4000].split("</tr>")[0]
            for name in ("ours-gone", "ruby-host-42", world.worker)}
    assert "stopped reporting" in rows["ours-gone"] and "Forget</button>" in rows["ours-gone"]
    assert "other client" in rows["ruby-host-42"] and "stopped reporting" in rows["ruby-host-42"]
    assert "Forget</button>" in rows["ruby-host-42"]
    # The planted worker popped a moment ago: another client's, and live.
    assert "other client" in rows[world.worker] and "Forget</button>" not in rows[world.worker]
    assert "1 reporting, 2 stopped reporting" in page


def test_forgetting_a_silent_worker_drops_its_presence_too(
    qless: Client, operator: HttpClient
) -> None:
    now = qless.now()
    publish(qless, presence("ours-gone", now - 120, seen=now - 120), ttl=0.05)
    time.sleep(0.1)
    response = post(operator, "worker_forget", {"name": "ours-gone"})
    assert messages_of(response) == ["Forgot worker ours-gone."]
    assert listed(qless) == []


def test_a_reporting_worker_of_ours_cannot_be_forgotten(
    qless: Client, operator: HttpClient
) -> None:
    publish(qless, presence("ours-1", qless.now()), ttl=30)
    response = post(operator, "worker_forget", {"name": "ours-1"})
    assert "still reporting" in " ".join(messages_of(response))
    assert [entry.name for entry in listed(qless)] == ["ours-1"]


def test_viewer_sees_no_forget_button(qless: Client, viewer: HttpClient) -> None:
    now = qless.now()
    qless.redis.zadd("ql:workers", {"old": now - 7200})
    page = viewer.get(url("workers")).content.decode()
    assert "old" in page and "Forget</button>" not in page


def test_worker_page_shows_its_process_settings_and_jobs_by_klass(
    qless: Client, operator: HttpClient,
) -> None:
    now = qless.now()
    publish(qless, replace(
        presence("ours-2", now), cpu_seconds=360.0, load=1.25,
        settings=(("strategy", "ordered"), ("time_limit", "30.0")),
        klasses=(KlassCount("app.jobs.render_invoice", 1200, 4),
                 KlassCount("app.jobs.send_mail", 34, 1)),
    ), ttl=30)
    page = operator.get(url("worker", name="ours-2")).content.decode()
    for text in ("web-7 / 31337", "django_qless v9.9.9", "1234 completed, 5 failed",
                 "150.0\xa0MB", "10.0% of one core", "1.25", "<code>time_limit</code></th><td>30.0",
                 "app.jobs.render_invoice</th><td class=\"num\">1200</td>",
                 "app.jobs.send_mail</th><td class=\"num\">34</td>"):
        assert text in page, text
    listing = operator.get(url("workers")).content.decode()
    assert "10.0%" in listing and "1.25" in listing


def test_worker_page_of_another_client_or_a_silent_worker_says_so(
    world: World, qless: Client, operator: HttpClient,
) -> None:
    now = qless.now()
    publish(qless, presence("ours-gone", now - 120, seen=now - 120), ttl=0.05)
    time.sleep(0.1)
    page = operator.get(url("worker", name="ours-gone")).content.decode()
    assert "stopped reporting" in page and "Jobs by function" not in page
    page = operator.get(url("worker", name=world.worker)).content.decode()
    assert "Not a <code>qless_worker</code> process" in page
