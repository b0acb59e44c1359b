"""The workers page: our workers' presence, other clients' workers, and who may be forgotten."""

from __future__ import annotations

import re
import time
from dataclasses import replace

from django.test import Client as HttpClient

from django_qless.core import Client
from django_qless.core.presence import KlassCount, Presence, RunningJob, listed, publish
from django_qless.worker.presence import INTERVAL
from tests.admin.conftest import KLASS, World, messages_of, post, url


def presence(name: str, now: float, seen: float | None = None,
             jid: str = "jid-running-now", started: float = 42) -> Presence:
    """A presence of one of our workers, running one job (since `started` seconds)."""
    return Presence(
        name=name, host="web-7", pid=31337, version="9.9.9", queues=("busy", "mail"),
        started=now - 3600, seen=now if seen is None else seen, done=1234, failed=5,
        rss_bytes=150 * 1024 * 1024,
        running=(RunningJob(jid, "app.jobs.render_invoice", now - started),),
    )


def running_by(qless: Client, worker: str, jid: str = "jid-running-now",
               clock_behind: float = 0.0) -> Client:
    """Put a job and pop it as `worker` (whose clock may run behind); its client."""
    theirs = Client(qless.redis, worker_name=worker, clock=lambda: qless.now() - clock_behind)
    theirs.queue("busy").put(KLASS, {}, jid=jid)
    [job] = theirs.queue("busy").pop()
    assert job.jid == jid
    return theirs


def running_cell(page: str, name: str) -> str:
    """The "Running now" cell of a worker's row on the workers page."""
    row = page[page.index(f">{name}<"):].split("</tr>")[0]
    return row.split('<td class="qless-running-now">')[1].split("</td>")[0]


def test_live_worker_shows_what_it_publishes(qless: Client, operator: HttpClient) -> None:
    running_by(qless, "ours-1", clock_behind=42)
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


def test_running_now_leaves_out_jobs_finished_since_the_last_report(
    qless: Client, operator: HttpClient
) -> None:
    # The worker reports every few seconds: its last report still names a job it completed.
    theirs = running_by(qless, "ours-1")
    publish(qless, presence("ours-1", qless.now(), started=0.04), ttl=30)
    assert "jid-running-now" in running_cell(operator.get(url("workers")).content.decode(),
                                             "ours-1")
    [job] = theirs.get_jobs(["jid-running-now"])
    job.complete()
    page = operator.get(url("workers")).content.decode()
    assert "jid-running-now" not in running_cell(page, "ours-1")
    assert "idle" in running_cell(page, "ours-1")
    worker_page = operator.get(url("worker", name="ours-1")).content.decode()
    assert "jid-running-now" not in worker_page.split("Running now")[1].split("</tr>")[0]


def test_running_now_leaves_out_a_job_another_worker_holds_or_whose_lease_expired(
    qless: Client, operator: HttpClient
) -> None:
    running_by(qless, "ours-2", jid="taken-over")
    qless.timeout("taken-over")
    [job] = Client(qless.redis, worker_name="ours-3").queue("busy").pop()
    assert job.jid == "taken-over"
    # Popped with a clock two leases behind: the lease has run out by now.
    running_by(qless, "ours-4", jid="lease-gone", clock_behind=130)
    now = qless.now()
    publish(qless, presence("ours-2", now, jid="taken-over"), ttl=30)
    publish(qless, presence("ours-4", now, jid="lease-gone"), ttl=30)
    page = operator.get(url("workers")).content.decode()
    assert "taken-over" not in running_cell(page, "ours-2")
    assert "lease-gone" not in running_cell(page, "ours-4")


def test_running_now_dates_a_job_from_its_latest_pop(qless: Client, operator: HttpClient) -> None:
    # A report made during an earlier run of the same job, by the same worker.
    theirs = running_by(qless, "ours-1")
    [job] = theirs.get_jobs(["jid-running-now"])
    job.complete()
    publish(qless, presence("ours-1", qless.now(), started=300), ttl=30)
    theirs.queue("busy").put(KLASS, {}, jid="jid-running-now")
    assert [job.jid for job in theirs.queue("busy").pop()] == ["jid-running-now"]
    cell = running_cell(operator.get(url("workers")).content.decode(), "ours-1")
    assert "jid-running-now" in cell
    shown = re.search(r"for ([\d.]+) (ms|s)<", cell)
    assert shown is not None, cell  # not "5 min", the age of the earlier run
    age = float(shown[1]) / (1000 if shown[2] == "ms" else 1)
    assert age < INTERVAL


def test_a_process_running_several_jobs_lists_each_one(qless: Client,
                                                       operator: HttpClient) -> None:
    theirs = running_by(qless, "ours-1", jid="jid-a")
    theirs.queue("busy").put(KLASS, {}, jid="jid-b")
    [second] = theirs.queue("busy").pop()
    assert second.jid == "jid-b"
    now = qless.now()
    both = replace(presence("ours-1", now), running=(
        RunningJob("jid-a", "app.jobs.render_invoice", now - 5),
        RunningJob("jid-b", "app.jobs.send_mail", now - 2)))
    publish(qless, both, ttl=30)
    cell = running_cell(operator.get(url("workers")).content.decode(), "ours-1")
    assert "jid-a" in cell and "jid-b" in cell and cell.count("<br>") == 1
    page = operator.get(url("worker", name="ours-1")).content.decode()
    shown = page.split("Running now")[1].split("</tr>")[0]
    assert "jid-a" in shown and "jid-b" in shown and "app.jobs.send_mail" in shown


def test_the_worker_page_shows_jobs_that_swallowed_their_interruption(
    qless: Client, operator: HttpClient,
) -> None:
    publish(qless, replace(presence("ours-1", qless.now()), swallowed=2), ttl=30)
    page = operator.get(url("worker", name="ours-1")).content.decode()
    assert "2 swallowed their interruption" in page
    publish(qless, presence("ours-2", qless.now()), ttl=30)
    assert "swallowed" not in operator.get(url("worker", name="ours-2")).content.decode()
