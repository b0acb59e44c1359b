"""Unit tests of the admin's helpers: masking, summaries, charts, durations, pagination."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from django_qless.admin import presenters
from django_qless.admin.feedback import problem_text
from django_qless.admin.pagination import MAX_PAGE, paginate, paginate_sequence
from django_qless.core import (
    DependencyError,
    JobNotFoundError,
    JobStateError,
    QlessError,
    ScriptArgumentError,
)
from django_qless.templatetags.qless_admin import duration, lease

KEYS = ("password", "token")


def test_masking_is_recursive_and_case_insensitive() -> None:
    data = {"Password": "a", "user": {"api_TOKEN": "b", "name": "c"}, "list": [{"token": 1}]}
    assert presenters.masked(data, KEYS) == {
        "Password": "********", "user": {"api_TOKEN": "********", "name": "c"},
        "list": [{"token": "********"}],
    }


def test_pretty_data_keeps_text_that_is_not_json() -> None:
    assert presenters.pretty_data("not json {") == "not json {"


@pytest.mark.parametrize(
    ("message", "summary"),
    [
        ("Traceback (most recent call last):\n  File x\nValueError: boom\n", "ValueError: boom"),
        ("\n\nJob exhausted retries\nmore", "Job exhausted retries"),
        ("", ""),
        ("x" * 500, "x" * 159 + "…"),
    ],
)
def test_failure_summary(message: str, summary: str) -> None:
    assert presenters.first_line(message) == summary


def test_chart_is_cut_after_the_last_bucket_with_data() -> None:
    histogram = tuple([0] * 148)
    empty = presenters.chart(histogram)
    assert empty.bars == [] and empty.end == "15 s"
    filled = list(histogram)
    filled[3], filled[61] = 4, 2  # 3-4 s and 2-3 min
    chart = presenters.chart(tuple(filled))
    assert [(bar.count, bar.label) for bar in chart.bars] == [
        (4, "3 s to 4 s"), (2, "2 min to 3 min")]
    assert chart.bars[0].height == 100 and chart.bars[1].height == 50
    assert chart.end == "3 min" and chart.ticks == [(600.0, "1 min")]
    assert presenters.bucket_bounds(147) == ("6 d", "7 d")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.35, "350 ms"), (4.25, "4.2 s"), (42, "42 s"), (184, "3 min 4 s"), (7500, "2 h 5 min"),
     (90000, "1 d 1 h"), ("x", "")],
)
def test_duration(seconds: object, text: str) -> None:
    assert duration(seconds) == text


def test_lease() -> None:
    assert lease(42) == "expires in 42 s" and lease(-5) == "expired 5.0 s ago"


def test_paginate_with_and_without_a_total() -> None:
    items = list(range(60))
    request = RequestFactory().get("/x", {"page": "3", "tab": "waiting"})
    page = paginate_sequence(request, items)
    assert list(page.items) == list(range(50, 60)) and not page.has_next and page.has_previous
    assert page.num_pages == 3 and page.previous_query == "page=2&tab=waiting"
    calls: list[tuple[int, int]] = []

    def fetch(offset: int, count: int) -> list[int]:
        calls.append((offset, count))
        return items[offset : offset + count]

    unknown = paginate(RequestFactory().get("/x", {"page": "2"}), fetch)
    assert calls == [(25, 26)] and unknown.has_next and len(unknown.items) == 25
    assert unknown.total is None and unknown.num_pages is None


def test_huge_page_numbers_are_clamped_and_not_fetched() -> None:
    request = RequestFactory().get("/x", {"page": str(10**30)})
    page = paginate(request, lambda offset, count: pytest.fail("fetched"), total=10)
    assert page.number == MAX_PAGE and list(page.items) == []


@pytest.mark.parametrize(("error", "shown"), [
    (DependencyError("cancel", "Cancel(): a is a dependency of b but is not mentioned to be "
                     "canceled"), "other jobs depend on it: cancel them together with it"),
    (JobNotFoundError("timeout", "Timeout(): Job a does not exist"), "no longer exists"),
    (JobStateError("timeout", "Timeout(): Job a not running"), "Job a not running"),
    (ScriptArgumentError("recur.update", "Recur.update(): Arg \"x\" bad"), 'Arg "x" bad'),
])
def test_refusals_are_shown_in_words_not_as_script_errors(error: QlessError, shown: str) -> None:
    assert problem_text(error) == shown
