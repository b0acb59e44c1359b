"""Prometheus metrics: the figures match what qless holds; the view is token- or staff-only."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db import transaction
from django.test import Client as HttpClient
from prometheus_client.parser import text_string_to_metric_families

from django_qless.core import Client, Timing
from django_qless.metrics.collector import BOUNDS, QLESS_BOUNDS, buckets
from django_qless.metrics.exposition import exposition
from tests.testapp.qless_jobs import add

# A scrape reads the outbox backlog of every database too.
pytestmark = pytest.mark.django_db(databases=["default", "other"])

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-for-tests"
URL = "/qless/metrics"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    """One sample's value (KeyError when absent)."""
    return found[(name, tuple(sorted({"connection": "default", **labels}.items())))]


@pytest.fixture
def seeded(qless: Client) -> Client:
    """Two queues: waiting, scheduled, running, completed and failed jobs, one worker."""
    emails = qless.queue("emails")
    for n in range(3):
        emails.put("K", {"n": n})
    emails.put("K", {}, delay=600)
    done, failing, running = emails.pop(3)
    done.complete()
    failing.fail("emails-ValueError", "boom")
    qless.queue("reports").put("K", {})
    qless.queue("reports").pause()
    assert running.state == "running"
    return qless


def test_queue_depths_workers_and_failures_are_reported(seeded: Client) -> None:
    found = samples(exposition().decode())
    assert value(found, "qless_up") == 1
    depths = {state: value(found, "qless_queue_jobs", queue="emails", state=state)
              for state in ("waiting", "running", "scheduled", "stalled", "depends")}
    assert depths == {"waiting": 0, "running": 1, "scheduled": 1, "stalled": 0, "depends": 0}
    assert value(found, "qless_queue_jobs", queue="reports", state="waiting") == 1
    assert value(found, "qless_queue_paused", queue="reports") == 1
    assert value(found, "qless_queue_paused", queue="emails") == 0
    assert value(found, "qless_failure_group_jobs", group="emails-ValueError") == 1
    assert value(found, "qless_jobs_completed_total", queue="emails") == 1
    assert value(found, "qless_jobs_failed_total", queue="emails") == 1
    assert value(found, "qless_workers") == 1
    assert value(found, "qless_workers_alive") == 1


def test_wait_and_run_histograms_come_from_qless_stats(seeded: Client) -> None:
    found = samples(exposition().decode())
    # Three jobs were popped at once, right after their put: each waited under a second.
    assert value(found, "qless_job_wait_seconds_count", queue="emails") == 3
    assert value(found, "qless_job_wait_seconds_bucket", queue="emails", le="1.0") == 3
    assert value(found, "qless_job_run_seconds_count", queue="emails") == 1
    assert value(found, "qless_job_run_seconds_bucket", queue="emails", le="+Inf") == 1


def test_buckets_are_cumulative_at_qless_bucket_edges() -> None:
    histogram = [0] * len(QLESS_BOUNDS)
    histogram[0] = 2        # under 1 s
    histogram[45] = 1       # 45-46 s
    histogram[60 + 3] = 4   # 4-5 minutes
    histogram[-1] = 1       # 6-7 days
    pairs = dict(buckets(Timing(count=8, mean=1.0, std=0.0, histogram=tuple(histogram))))
    assert len(QLESS_BOUNDS) == 148 and all(f"{b}.0" in pairs for b in BOUNDS)
    edges = ("1.0", "30.0", "60.0", "300.0", "86400.0")
    assert [pairs[edge] for edge in edges] == [2, 2, 3, 7, 7]
    assert pairs["+Inf"] == 8


def test_a_connection_that_fails_reports_up_zero(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"CONNECTIONS": {
        "default": {"URL": qless_url},
        "gone": {"URL": "redis://127.0.0.1:1/0", "QUEUES": ["elsewhere"],
                 "OPTIONS": {"socket_connect_timeout": 0.2}},
    }}
    found = samples(exposition().decode())
    assert value(found, "qless_up") == 1
    assert found[("qless_up", (("connection", "gone"),))] == 0


def test_anonymous_and_wrong_tokens_get_401(settings: Any, qless: Client) -> None:
    settings.QLESS = {**settings.QLESS, "METRICS_TOKEN": TOKEN}
    http = HttpClient()
    assert http.get(URL).status_code == 401
    response = http.get(URL, HTTP_AUTHORIZATION="Bearer wrong-token-of-some-length")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_the_token_reads_the_metrics(settings: Any, seeded: Client) -> None:
    settings.QLESS = {**settings.QLESS, "METRICS_TOKEN": TOKEN}
    response = HttpClient().get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "no-cache" in response["Cache-Control"]
    assert value(samples(response.content.decode()), "qless_queue_paused", queue="reports") == 1


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_token_scheme_is_case_insensitive(settings: Any, seeded: Client, scheme: str) -> None:
    settings.QLESS = {**settings.QLESS, "METRICS_TOKEN": TOKEN}
    response = HttpClient().get(URL, HTTP_AUTHORIZATION=f"{scheme} {TOKEN}")
    assert response.status_code == 200
    assert value(samples(response.content.decode()), "qless_queue_paused", queue="reports") == 1
    wrong = HttpClient().get(URL, HTTP_AUTHORIZATION=f"{scheme} wrong-token-of-some-length")
    assert wrong.status_code == 401
    assert HttpClient().get(URL, HTTP_AUTHORIZATION=f"{scheme}  {TOKEN}").status_code == 200
    for other in (f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearers {TOKEN}", TOKEN):
        assert HttpClient().get(URL, HTTP_AUTHORIZATION=other).status_code == 401


def test_staff_needs_the_view_permission(seeded: Client) -> None:
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    http = HttpClient()
    http.force_login(user)
    assert http.get(URL).status_code == 401
    user.user_permissions.add(Permission.objects.get(codename="view_qless"))
    http.force_login(User.objects.get(pk=user.pk))
    assert http.get(URL).status_code == 200
    assert http.post(URL).status_code in (401, 405)


def test_a_short_token_is_a_configuration_error(settings: Any, qless_url: str) -> None:
    from django_qless.conf.reader import parse  # noqa: PLC0415

    parsed, problems = parse({"URL": qless_url, "METRICS_TOKEN": "short"})
    assert parsed is None
    assert [problem.id for problem in problems] == ["django_qless.E040"]


def test_the_command_prints_one_scrape(seeded: Client) -> None:
    out = io.StringIO()
    started = time.monotonic()
    call_command("qless_metrics", "--once", stdout=out)
    assert time.monotonic() - started < 5
    assert value(samples(out.getvalue()), "qless_queue_jobs", queue="reports", state="waiting") == 1


def test_the_grafana_dashboard_queries_only_exported_metrics(seeded: Client) -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana" / "django-qless.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bqless_[a-z_]+", target["expr"])
    }
    exported = {sample_name for sample_name, _ in samples(exposition().decode())}
    assert queried and queried <= exported, queried - exported


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_the_outbox_backlog_is_reported(settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0", "OPTIONS": {"socket_connect_timeout": 0.2}}
    with transaction.atomic():  # Redis is unreachable: the rows stay for the sweep
        add.enqueue(1, 2)
        add.enqueue(3, 4)
    found = samples(exposition().decode())
    assert found[("qless_up", (("connection", "default"),))] == 0
    assert found[("qless_outbox_rows", (("database", "default"),))] == 2
    assert 0 <= found[("qless_outbox_oldest_age_seconds", (("database", "default"),))] < 60


def test_queue_latency_is_the_wait_of_the_next_job(qless: Client) -> None:
    qless.queue("reports").put("K", {})
    qless.queue("emails").put("K", {}, delay=600)
    time.sleep(0.3)
    found = samples(exposition().decode())
    assert 0.3 <= value(found, "qless_queue_latency_seconds", queue="reports") < 5
    assert value(found, "qless_queue_latency_seconds", queue="emails") == 0  # none waits
