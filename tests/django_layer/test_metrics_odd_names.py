"""Metrics with queue names other qless clients can create: control characters, quotes,
backslashes and text that mimics other series. Every series stays, none is forged, and the
exposition parses line by line with prometheus_client's own parser."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from django.test import Client as HttpClient
from prometheus_client.parser import text_string_to_metric_families

from django_qless.connection import get_client
from django_qless.core import Client

pytestmark = pytest.mark.django_db(databases=["default", "other"])

TOKEN = "s3cret-token-for-odd-names"
URL = "/qless/metrics"
NOW = 1_700_000_000.0
#: A queue every odd one mirrors: the same jobs, so the same figures.
PLAIN = "emails"
ODD_NAMES = (
    "line\nfeed",
    "tab\there",
    "nul\x00byte",
    "del\x7fchar",
    "cr\rreturn",
    "esc\x1b[31mred",
    "next\x85line",
    "para\u2029sep",
    'quote"inside',
    "back\\slash",
    "ends with backslash\\",
    PLAIN + "\n",
    PLAIN + '"',
    PLAIN + '",state="waiting',
    'forge"} 1\nqless_up{connection="default"} 0\n'
    'qless_queue_jobs{connection="default",queue="emails",state="waiting"} 99\n#',
    '"} 1\nfoo{',
)
#: A sample: its name and sorted labels.
Key = tuple[str, tuple[tuple[str, str], ...]]
LINE = re.compile(r"# (HELP|TYPE) qless_\w+ .*|qless_\w+(\{.*\})? \S+")


def plant(client: Client, queue: str, tag: str) -> None:
    """Through the raw script, as another client would: 1 waiting, 1 completed, 1 failed."""
    for n in range(3):
        client.call("put", "other-client", queue, f"{tag}-{n}", "Klass", "{}", 0)
    first, second = (f"{tag}-0", f"{tag}-1")
    client.call("pop", queue, "w1", 2)
    client.call("complete", first, "w1", queue, "{}")
    client.call("fail", second, "w1", f"{queue}-ValueError", "boom")


def scrape(settings: Any) -> str:
    """One scrape through the view, with the metrics token."""
    settings.QLESS = {**settings.QLESS, "METRICS_TOKEN": TOKEN}
    response = HttpClient().get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    return response.content.decode("utf-8")


def parsed(text: str) -> tuple[dict[Key, float], int]:
    """Every sample of an exposition (none twice) and how many families it has."""
    found: dict[Key, float] = {}
    families = list(text_string_to_metric_families(text))
    for family in families:
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in found, f"duplicate series {key}"
            found[key] = sample.value
    return found, len(families)


def mirrored(found: dict[Key, float], name: str) -> dict[Key, float]:
    """The series of `PLAIN` (and its failure group) as they read for queue `name`."""
    renamed = {"queue": {PLAIN: name}, "group": {f"{PLAIN}-ValueError": f"{name}-ValueError"}}
    mirror: dict[Key, float] = {}
    for (sample, labels), value in found.items():
        swapped = tuple((label, renamed.get(label, {}).get(text, text)) for label, text in labels)
        if swapped != labels:
            mirror[(sample, tuple(sorted(swapped)))] = value
    return mirror


def counted(found: dict[Key, float]) -> dict[Key, float]:
    """The samples that count jobs (not the timings, which depend on the clock)."""
    return {key: value for key, value in found.items()
            if not key[0].endswith("_sum") and key[0] != "qless_queue_latency_seconds"}


def test_odd_queue_names_keep_every_series_and_forge_none(
    settings: Any, qless: Client, caplog: pytest.LogCaptureFixture
) -> None:
    plant(qless, PLAIN, "plain")
    qless.queue("reports").put("Klass", {})
    before, _ = parsed(scrape(settings))
    # Depths, latency, paused, counters, both histograms and the failure group.
    assert len(mirrored(before, "any other name")) > 40
    for index, name in enumerate(ODD_NAMES):
        plant(qless, name, f"odd{index}")

    with caplog.at_level(logging.WARNING):
        text = scrape(settings)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

    found, families = parsed(text)
    expected = dict(before)
    for name in ODD_NAMES:
        expected.update(mirrored(before, name))
    # Every series of the other queues is still there with its value, each odd queue has
    # exactly the series of a plain one, and nothing else appeared (no forged sample).
    assert sorted(found) == sorted(expected)
    assert counted(found) == counted(expected)
    assert found[("qless_up", (("connection", "default"),))] == 1
    # The line structure holds: one line per sample plus HELP and TYPE per family.
    lines = text.rstrip("\n").split("\n")
    assert all(LINE.fullmatch(line) for line in lines), [
        line for line in lines if not LINE.fullmatch(line)
    ]
    assert len(lines) == len(found) + 2 * families


def test_label_values_are_escaped_as_the_text_format_says(
    settings: Any, qless: Client
) -> None:
    plant(qless, 'a\\b"c\nd\te\x00f\x7fg', "odd")
    text = scrape(settings)
    # Backslash, double quote and line feed escaped; every other character as it is.
    assert 'queue="a\\\\b\\"c\\nd\te\x00f\x7fg"' in text


def test_a_name_that_is_not_utf8_costs_only_its_own_connection(
    settings: Any, qless_url: str, redis_server: Any
) -> None:
    other_url = f"redis://127.0.0.1:{redis_server.port}/1"
    settings.QLESS = {"CONNECTIONS": {
        "default": {"URL": qless_url}, "other": {"URL": other_url, "QUEUES": ["elsewhere"]},
    }}
    plant(get_client("default"), PLAIN, "plain")
    get_client("other").call("put", "other-client", b"not utf-8 \xff", "j", "Klass", "{}", 0)
    found, _ = parsed(scrape(settings))
    assert found[("qless_up", (("connection", "default"),))] == 1
    assert found[("qless_up", (("connection", "other"),))] == 0
    depth = ("qless_queue_jobs",
             (("connection", "default"), ("queue", PLAIN), ("state", "waiting")))
    assert found[depth] == 1
