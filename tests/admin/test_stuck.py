"""The overview's "What is stuck": each kind shown with its link, nothing when healthy, the
per-queue latency threshold (permission, validation, audit), and the live refresh."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.admin import stuck
from django_qless.audit_log.models import AuditEntry
from django_qless.conf import parse
from django_qless.core import Client, keys
from django_qless.core.crons import CronStore
from django_qless.core.latency import latencies
from django_qless.core.presence import publish
from django_qless.core.stuck import DEPENDS_PER_QUEUE
from tests.admin.conftest import KLASS, World, logged_in, messages_of, post, url
from tests.admin.test_workers_page import presence
from tests.recurring.cron_helpers import define


def behind(qless: Client, seconds: float, worker: str = "behind-1") -> Client:
    """A client on the same Redis whose clock runs `seconds` behind (a past moment)."""
    return Client(qless.redis, worker_name=worker, clock=lambda: qless.now() - seconds)


def panel(client: HttpClient, **headers: str) -> str:
    """The "What is stuck" section of the overview, unescaped."""
    response = client.get(url("overview"), **headers)
    assert response.status_code == 200
    page = response.content.decode()
    start = page.index('aria-labelledby="qless-stuck-title"')
    return html.unescape(page[start:page.index("</section>", start)])


def lines(section: str, kind: str) -> list[str]:
    """The panel's lines of one kind (`data-qless-stuck`), tags kept."""
    return re.findall(rf'<li data-qless-stuck="{kind}">(.*?)</li>\s*(?=<li data|</ul>)',
                      section, re.S)


def test_nothing_stuck_on_a_healthy_world(world: World, viewer: HttpClient) -> None:
    section = panel(viewer)
    assert "Nothing stuck" in section
    assert "data-qless-stuck" not in section


def test_other_clients_silent_worker_and_its_stalled_job(
    qless: Client, viewer: HttpClient
) -> None:
    # Popped 130 s ago under the default 60 s lease: the worker went quiet, its lease expired.
    gone = behind(qless, 130, worker="ruby-host-9")
    gone.queue("busy").put(KLASS, {}, jid="held-job")
    [job] = gone.queue("busy").pop()
    section = panel(viewer)
    [worker] = lines(section, "worker")
    assert f'href="{url("worker", name="ruby-host-9")}"' in worker
    assert "holds 1 job (1 stalled) but qless has not seen it for 2 min 10 s" in worker
    [stalled] = lines(section, "stalled")
    assert f'href="{url("queue", name="busy")}?tab=stalled"' in stalled
    assert "1 stalled job in queue busy" in stalled
    assert "Nothing stuck" not in section


def test_a_queues_longer_lease_is_allowed_before_a_worker_counts_as_silent(
    qless: Client, viewer: HttpClient
) -> None:
    qless.queue("busy").heartbeat = 300  # its workers heartbeat every 5 min at most
    gone = behind(qless, 130, worker="ruby-host-9")
    gone.queue("busy").put(KLASS, {})
    gone.queue("busy").pop()
    assert "Nothing stuck" in panel(viewer)


def test_our_worker_that_stopped_reporting(qless: Client, viewer: HttpClient) -> None:
    ours = Client(qless.redis, worker_name="ours-gone")
    ours.queue("busy").put(KLASS, {}, jid="ours-job")
    ours.queue("busy").pop()
    publish(qless, presence("ours-gone", qless.now() - 30, jid="ours-job"), ttl=0.05)
    time.sleep(0.1)
    [worker] = lines(panel(viewer), "worker")
    assert "ours-gone" in worker and "holds 1 job but stopped reporting for 30 s" in worker


def test_live_workers_are_not_listed(qless: Client, viewer: HttpClient) -> None:
    ours = Client(qless.redis, worker_name="ours-live")
    ours.queue("busy").put(KLASS, {})
    ours.queue("busy").pop()
    publish(qless, presence("ours-live", qless.now()), ttl=30)
    assert "Nothing stuck" in panel(viewer)


def test_jobs_waiting_on_a_failed_or_vanished_dependency(
    qless: Client, viewer: HttpClient
) -> None:
    queue = qless.queue("flow")
    broken = queue.put(KLASS, {}, jid="parent-broken")
    gone = queue.put(KLASS, {}, jid="parent-gone")
    fine = queue.put(KLASS, {}, jid="parent-fine", priority=-1)
    queue.put(KLASS, {}, jid="child-of-broken", depends=[broken])
    queue.put(KLASS, {}, jid="child-of-gone", depends=[gone])
    queue.put(KLASS, {}, jid="child-of-fine", depends=[fine])
    [job] = queue.pop()
    assert job.jid == broken
    job.fail("flow-Error", "boom")
    qless.redis.delete(keys.job(gone))  # gone without its dependents hearing (another client)
    [blocked] = lines(panel(viewer), "blocked")
    assert blocked.startswith("2 jobs wait on a dependency that failed or no longer exists")
    assert f'href="{url("job", jid="child-of-broken")}"' in blocked
    assert f'href="{url("job", jid="parent-broken")}"' in blocked and "(failed)" in blocked
    assert "<code>parent-gone</code> (no longer exists)" in blocked
    assert "child-of-fine" not in blocked


def test_the_depends_scan_says_how_far_it_looked(
    qless: Client, viewer: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_qless.core.stuck.DEPENDS_PER_QUEUE", 2)
    parent = qless.queue("flow").put(KLASS, {}, jid="parent")
    for index in range(3):
        qless.queue("flow").put(KLASS, {}, jid=f"child-{index}", depends=[parent])
    section = panel(viewer)
    assert "Dependencies looked at for the first 2 of 3 jobs waiting on dependencies" in section
    assert f'href="{url("queue", name="flow")}?tab=depends"' in section
    assert DEPENDS_PER_QUEUE == 100  # the module's own bound is back
    monkeypatch.setattr("django_qless.core.stuck.MAX_DEPENDS_QUEUES", 0)
    section = panel(viewer)
    assert "Dependencies not looked at for the 3 jobs waiting on dependencies in queue" in section
    assert "waits on a failed dependency (of those looked at, see below)" in section


def test_recurring_template_due_and_not_spawned(qless: Client, viewer: HttpClient) -> None:
    behind(qless, 600).queue("nightly").recur(KLASS, {}, 3600, jid="report")
    [due] = lines(panel(viewer), "recurring")
    assert due.startswith("1 recurring template in queue")
    assert f'href="{url("recurring", jid="report")}"' in due and "10 min overdue" in due
    # Spawned by a pop, it is no longer due.
    qless.queue("nightly").pop()
    assert lines(panel(viewer), "recurring") == []


def test_cron_slot_not_put_and_slot_job_not_run(qless: Client, viewer: HttpClient) -> None:
    past = behind(qless, 3600)
    define(past, "* * * * *", name="sched")
    section = panel(viewer)
    [due] = lines(section, "cron")
    assert "1 cron schedule has a slot due and not put" in due and ">sched</a>" in due
    assert f'href="{url("recurring_list")}#qless-cron-title"' in due
    assert lines(section, "late-slot") == []
    # A worker an hour ago put its slot job; none has run it since.
    [put] = [o for o in CronStore(past).create_slots("sched") if o.created]
    [late] = lines(panel(viewer), "late-slot")
    assert f'href="{url("job", jid=put.jid)}"' in late
    assert "is still scheduled" in late or "is still waiting" in late


def test_queue_paused_from_the_admin_then_unpaused(
    qless: Client, operator: HttpClient
) -> None:
    qless.queue("mail").put(KLASS, {})
    post(operator, "queue_pause", {"queue": "mail"})
    stored = json.loads(qless.redis.hget(keys.PAUSED_SINCE, "mail"))
    assert stored["by"] == "admin" and abs(stored["at"] - qless.now()) < 5
    assert lines(panel(operator), "paused") == []  # not paused for long yet
    qless.redis.hset(keys.PAUSED_SINCE, "mail",
                     json.dumps({"at": qless.now() - 3600, "by": "admin"}))
    [paused] = lines(panel(operator), "paused")
    assert "has been paused for 1 h" in paused and "paused from this admin at" in paused
    assert f'href="{url("queue", name="mail")}"' in paused
    post(operator, "queue_unpause", {"queue": "mail"})
    assert qless.redis.hget(keys.PAUSED_SINCE, "mail") is None
    assert lines(panel(operator), "paused") == []


def test_queue_paused_by_another_client_is_dated_when_first_seen(
    qless: Client, viewer: HttpClient
) -> None:
    qless.queue("mail").put(KLASS, {})
    qless.queue("mail").pause()
    assert lines(panel(viewer), "paused") == []
    stored = json.loads(qless.redis.hget(keys.PAUSED_SINCE, "mail"))
    assert stored["by"] == "seen"
    qless.redis.hset(keys.PAUSED_SINCE, "mail",
                     json.dumps({"at": qless.now() - 1800, "by": "seen"}))
    [paused] = lines(panel(viewer), "paused")
    assert "paused for 30 min" in paused
    assert "paused by another client, first seen paused here at" in paused
    # Unpaused elsewhere: the date goes when the overview sees it.
    qless.queue("mail").unpause()
    assert lines(panel(viewer), "paused") == []
    assert qless.redis.hget(keys.PAUSED_SINCE, "mail") is None


def test_queue_waiting_past_the_default_and_its_own_threshold(
    qless: Client, operator: HttpClient
) -> None:
    behind(qless, 1000).queue("slow").put(KLASS, {})
    [slow] = lines(panel(operator), "latency")
    assert f'href="{url("queue", name="slow")}"' in slow
    assert "has waited 16 min 40 s, more than the default threshold of 5 min" in slow
    response = post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": "2000"})
    assert messages_of(response) == ["Queue slow: latency threshold 33 min 20 s."]
    assert lines(panel(operator), "latency") == []
    post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": "600"})
    [slow] = lines(panel(operator), "latency")
    assert "more than its threshold of 10 min" in slow
    response = post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": "0"})
    assert messages_of(response) == ["Queue slow: latency threshold off (never flagged)."]
    assert lines(panel(operator), "latency") == []
    post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": ""})
    assert qless.redis.hget(keys.LATENCY_THRESHOLDS, "slow") is None
    assert len(lines(panel(operator), "latency")) == 1


def test_no_default_threshold_judges_only_queues_with_their_own(
    qless: Client, viewer: HttpClient, settings: Any, qless_settings: dict[str, Any]
) -> None:
    settings.QLESS = {**qless_settings, "ADMIN": {"LATENCY_THRESHOLD": None}}
    behind(qless, 1000).queue("slow").put(KLASS, {})
    assert lines(panel(viewer), "latency") == []
    qless.redis.hset(keys.LATENCY_THRESHOLDS, "slow", "60")
    assert len(lines(panel(viewer), "latency")) == 1


def test_threshold_edit_is_audited_and_shown_on_the_queue_page(
    qless: Client, operator: HttpClient
) -> None:
    qless.queue("slow").put(KLASS, {})
    post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": "90"})
    assert qless.redis.hget(keys.LATENCY_THRESHOLDS, "slow") == b"90.0"
    [entry] = AuditEntry.objects.all()
    assert (entry.action, entry.kind, entry.target, entry.actor) == (
        "latency_threshold", "queue", "slow", "operator")
    assert entry.before == {"latency threshold": None}
    assert entry.after == {"latency threshold": 90.0}
    page = operator.get(url("queue", name="slow")).content.decode()
    assert "latency threshold: 1 min 30 s (this queue)" in page
    assert 'name="threshold" value="90"' in page
    # Kept out of ql:config, which other qless clients list as theirs.
    assert not any(b"slow" in key for key in qless.redis.hkeys(keys.CONFIG))


@pytest.mark.parametrize("value", ["abc", "-5", "inf", "nan", "1e12"])
def test_bad_threshold_is_refused_and_nothing_written(
    qless: Client, operator: HttpClient, value: str
) -> None:
    qless.queue("slow").put(KLASS, {})
    response = post(operator, "queue_latency_threshold", {"queue": "slow", "threshold": value})
    [message] = messages_of(response)
    assert message.startswith("Nothing was changed: threshold:")
    assert not qless.redis.exists(keys.LATENCY_THRESHOLDS)
    assert not AuditEntry.objects.exists()


def test_threshold_edit_needs_manage_queues(
    qless: Client, make_user: Callable[..., User]
) -> None:
    watcher = logged_in(make_user("watcher", perms=("view_qless", "edit_jobs")))
    response = watcher.post(url("queue_latency_threshold"), {"queue": "slow", "threshold": "5"})
    assert response.status_code == 403
    assert not qless.redis.exists(keys.LATENCY_THRESHOLDS)
    assert not AuditEntry.objects.exists()
    assert watcher.get(url("queue_latency_threshold")).status_code in (403, 405)
    # Nor is the form offered to who may not use it.
    qless.queue("slow").put(KLASS, {})
    assert 'name="threshold"' not in watcher.get(url("queue", name="slow")).content.decode()


def test_live_refresh_carries_the_panel(qless: Client, viewer: HttpClient) -> None:
    behind(qless, 1000).queue("slow").put(KLASS, {})
    response = viewer.get(url("overview"), HTTP_X_QLESS_LIVE="1")
    assert response.status_code == 200
    assert "X-Qless-Live" in response["Vary"]
    assert 'data-qless-stuck="latency"' in response.content.decode()


@pytest.mark.parametrize("value", ["300", 0, -1, float("inf"), True])
def test_bad_default_threshold_setting_is_refused(value: Any) -> None:
    settings, problems = parse({"ADMIN": {"LATENCY_THRESHOLD": value}})
    assert settings is None
    assert [p.key for p in problems] == ["QLESS['ADMIN']['LATENCY_THRESHOLD']"]


def test_default_threshold_setting() -> None:
    default, _ = parse({})
    assert default is not None and default.admin.latency_threshold == 300.0
    custom, problems = parse({"ADMIN": {"LATENCY_THRESHOLD": 45}})
    assert problems == () and custom is not None and custom.admin.latency_threshold == 45.0
    off, problems = parse({"ADMIN": {"LATENCY_THRESHOLD": None}})
    assert problems == () and off is not None and off.admin.latency_threshold is None


def calls_of_the_panel(qless: Client) -> dict[str, int]:
    """Redis commands (name -> calls) one build of the panel runs, from the overview's reads."""
    queues, workers = qless.queues(), qless.workers.counts()
    waited = latencies(qless, [queue.name for queue in queues])
    qless.redis.config_resetstat()
    stuck.build(qless, queues, workers, waited)
    stats = qless.redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(found["calls"]) for name, found in stats.items()
            if name not in ("cmdstat_config", "cmdstat_info")}


def test_the_panel_reads_the_same_whatever_the_depends_set_holds(qless: Client) -> None:
    failed = qless.queue("flow").put(KLASS, {}, jid="failed-parent")
    [job] = qless.queue("flow").pop()
    job.fail("flow-Error", "boom")
    for index in range(150):
        qless.queue("flow").put(KLASS, {}, jid=f"child-{index:04d}", depends=[failed])
    small = calls_of_the_panel(qless)
    for index in range(150, 600):
        qless.queue("flow").put(KLASS, {}, jid=f"child-{index:04d}", depends=[failed])
    assert calls_of_the_panel(qless) == small
    assert not {"keys", "scan", "smembers"} & set(small)
    assert small["sscan"] == DEPENDS_PER_QUEUE  # one step per job looked at
