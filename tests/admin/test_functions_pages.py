"""The Functions pages: every klass over a range (sortable, tops) and one klass' charts,
percentiles, histograms and deploy markers."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.core import Client
from django_qless.core import fn_metrics as fm
from django_qless.core.deploys import mark_deploy
from django_qless.worker.fn_tally import FunctionTally
from tests.admin.conftest import logged_in, url


def ran(qless: Client, klass: str, seconds: list[float], outcome: str = "completed",
        ago: float = 0.0, queue: str = "q", waited: float | None = 0.01) -> None:
    """Add executions of `klass` as a worker's publication does, `ago` seconds back."""
    tally = FunctionTally()
    for duration in seconds:
        tally.count(klass, queue, outcome, duration, waited)
    pipe = qless.redis.pipeline()
    fm.add_functions(pipe, tally.take(), qless.now() - ago)
    pipe.execute()


def klass_order(page: str) -> list[str]:
    """The klasses of the table's rows, top to bottom."""
    if 'class="qless-table qless-functions"' not in page:
        return []
    body = page.split('class="qless-table qless-functions"', 1)[1]
    return re.findall(r'<th scope="row"><a href="[^"]*">([^<]+)</a>', body)


@pytest.fixture
def seeded(qless: Client) -> None:
    """Three klasses: a slow one, a failing one, a busy quick one."""
    ran(qless, "app.slow", [2.0, 3.0])
    ran(qless, "app.flaky", [0.01] * 3)
    ran(qless, "app.flaky", [0.01] * 4, outcome="failed")
    ran(qless, "app.quick", [0.005] * 20)  # 100 ms in all, more than app.flaky


def test_the_list_sorts_by_total_time_then_by_failures(seeded: None, viewer: HttpClient) -> None:
    page = viewer.get(url("functions")).content.decode()
    assert klass_order(page) == ["app.slow", "app.quick", "app.flaky"]
    assert "5.0 s" in page  # app.slow's total time
    by_failures = viewer.get(url("functions") + "?sort=failures").content.decode()
    assert klass_order(by_failures) == ["app.flaky", "app.quick", "app.slow"]
    assert "57.1%" in by_failures  # 4 of app.flaky's 7 executions failed
    top = by_failures.split('id="qless-top-failures"', 1)[1].split("</table>", 1)[0]
    assert "app.flaky" in top and "app.slow" not in top
    by_name = viewer.get(url("functions") + "?sort=name&range=7d").content.decode()
    assert klass_order(by_name) == ["app.flaky", "app.quick", "app.slow"]
    bad = viewer.get(url("functions") + "?sort=<x>&range=1y").content.decode()
    assert klass_order(bad) == klass_order(page)  # unknown values fall back to the defaults


def test_ranges_cover_what_they_say(qless: Client, viewer: HttpClient) -> None:
    ran(qless, "app.old", [0.1], ago=3 * 86400)
    ran(qless, "app.today", [0.1], ago=5 * 3600)
    assert klass_order(viewer.get(url("functions")).content.decode()) == []
    assert "No job function ran in the last hour" in viewer.get(url("functions")).content.decode()
    assert klass_order(viewer.get(url("functions") + "?range=24h").content.decode()) == [
        "app.today"]
    assert sorted(klass_order(viewer.get(url("functions") + "?range=7d").content.decode())) == [
        "app.old", "app.today"]


def test_a_function_page_draws_its_charts_percentiles_and_deploys(
    qless: Client, viewer: HttpClient
) -> None:
    ran(qless, "app.report", [0.100] * 90 + [0.900] * 10)
    ran(qless, "app.report", [0.1], outcome="retried", waited=None)
    mark_deploy(qless.redis, "v2.3.1", qless.now() - 120)
    mark_deploy(qless.redis, "v1.0", qless.now() - 30 * 86400)  # out of every range
    response = viewer.get(url("function", klass="app.report"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<dd>101 <span" in page and "100, 0, 1" in page
    for caption in ("Executions by outcome", "Run time percentiles", "Wait time percentiles",
                    "Run time histogram", "Wait time histogram"):
        assert f"<strong>{caption}</strong>" in page
    p50, p95, p99 = re.search(r"<dt>Run time p50 / p95 / p99</dt><dd>([^<]+)</dd>",
                              page).group(1).split(" / ")
    assert p50.endswith(" ms") and 70 <= float(p50.split()[0]) <= 100
    assert p99.endswith(" ms") and 700 <= float(p99.split()[0]) <= 1000
    # Marked inside each of the three time charts, and named in each one's text alternative.
    assert page.count("<title>Deploy: v2.3.1</title>") == 3 and "v1.0" not in page
    assert page.count("Deploys marked: v2.3.1.") == 3
    assert '/search/?klass=app.report"' in page or "?klass=app.report" in page


def test_an_unknown_function_says_it_ran_nothing(viewer: HttpClient) -> None:
    response = viewer.get(url("function", klass="no.such<b>"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "No job of no.such&lt;b&gt; ended in the last hour" in page
    assert 'role="img"' not in page


def test_the_pages_need_the_view_permission(
    seeded: None, make_user: Callable[..., User]
) -> None:
    staff = logged_in(make_user("staff", perms=()))
    for path in (url("functions"), url("function", klass="app.slow")):
        assert staff.get(path).status_code == 403
        assert logged_in(None).get(path).status_code == 302  # to the login page
