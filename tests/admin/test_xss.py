"""E3: markup planted in every job-sourced field comes out escaped on every page."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client as HttpClient

from tests.admin.conftest import url
from tests.conftest import LuaScript

PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "');alert(1);//",
    "</script><script>alert(2)</script>",
    "javascript:alert(1)",
)
#: What must never appear in a response: live markup or script from a payload.
FORBIDDEN = (
    re.compile(r"<script>alert", re.I),
    re.compile(r"<img[^>]*onerror", re.I),
    re.compile(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", re.I),
    re.compile(r"</script><script>", re.I),
    re.compile(r"'\);alert\(1\);//"),
)
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
ROOT = Path(__file__).resolve().parents[2]


def names(payload: str) -> dict[str, str]:
    """The jids, queues and names planted for one payload."""
    return {
        "queue": payload, "failing_queue": payload + "-f", "busy_queue": payload + "-r",
        "jid": payload, "failed": payload + "-failed", "running": payload + "-running",
        "child": payload + "-child", "recurring": payload + "-recur",
    }


def plant_payload(lua: LuaScript, payload: str, now: float) -> None:
    """Put the payload into every field a job, worker, recurrence or config can hold."""
    n = names(payload)
    data = json.dumps({payload: payload, "nested": {payload: [payload]}})
    tags = json.dumps([payload])
    lua("put", now, "w", n["queue"], n["jid"], payload, data, 0, "tags", tags)
    depends = json.dumps([n["jid"]])
    lua("put", now, "w", n["queue"], n["child"], payload, data, 0, "depends", depends)
    lua("log", now, n["jid"], payload, json.dumps({payload: payload}))
    lua("track", now, "track", n["jid"])
    lua("put", now, "w", n["failing_queue"], n["failed"], payload, data, 0, "tags", tags)
    lua("pop", now, n["failing_queue"], payload, 1)
    lua("fail", now, n["failed"], payload, payload, f"Traceback\n{payload}\n{payload}")
    lua("put", now, "w", n["busy_queue"], n["running"], payload, data, 0)
    lua("pop", now, n["busy_queue"], payload, 1)
    lua("recur", now, n["queue"], n["recurring"], payload, data, "interval", 60, 0, "tags", tags)
    lua("config.set", now, payload, payload)


@pytest.fixture
def planted(lua: LuaScript, qless: Any) -> None:
    """Every payload planted, the qless application name too."""
    now = time.time()
    for payload in PAYLOADS:
        plant_payload(lua, payload, now)
    lua("config.set", now, "application", PAYLOADS[0])


def pages_for(payload: str) -> list[str]:
    """Every page that can show something planted for this payload."""
    n = names(payload)
    queue_page = url("queue", name=n["queue"])
    tabs = ("stats", "running", "waiting", "scheduled", "stalled", "depends", "recurring")
    return [
        url("overview"), url("queues"), url("failures"), url("completed"), url("workers"),
        url("config"), url("search"), url("recurring_list") + f"?queue={n['queue']}",
        *(f"{queue_page}?tab={tab}" for tab in tabs),
        url("queue", name=n["busy_queue"]) + "?tab=running",
        url("job", jid=n["jid"]), url("job", jid=n["failed"]), url("job", jid=n["running"]),
        url("job", jid=n["child"]), url("failure_group", group=payload),
        url("worker", name=payload), url("recurring", jid=n["recurring"]),
        url("tracked"), *(url("tracked") + f"?state={s}" for s in ("waiting", "gone")),
        url("tagged") + "?" + _query("tag", payload),
        url("search") + "?" + _query("q", payload),
    ]


def _query(name: str, value: str) -> str:
    return urlencode({name: value})


def assert_clean(body: str, where: str) -> None:
    """No payload survives as markup."""
    for pattern in FORBIDDEN:
        match = pattern.search(body)
        assert match is None, f"{where}: raw payload {match.group(0)!r}"


def test_every_page_escapes_planted_markup(planted: None, operator: HttpClient) -> None:
    seen_escaped = 0
    for payload in PAYLOADS:
        for path in pages_for(payload):
            response = operator.get(path, follow=True)
            assert response.status_code == 200, path
            body = response.content.decode()
            assert_clean(body, path)
            seen_escaped += ESCAPED in body
    # The planted values really are on the pages (escaped), not silently left out.
    assert seen_escaped > 20


def test_job_page_shows_each_field_escaped(planted: None, operator: HttpClient) -> None:
    payload = PAYLOADS[1]
    body = operator.get(url("job", jid=names(payload)["failed"])).content.decode()
    escaped = "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert body.count(escaped) >= 6  # klass, queue, tag, data key and value, group, message


def test_confirmation_and_messages_escape_posted_values(
    planted: None, operator: HttpClient
) -> None:
    jid = names(PAYLOADS[0])["jid"]
    confirm = operator.post(url("job_cancel"), {"jids": [jid], "next": "/admin/"})
    assert confirm.status_code == 200
    assert_clean(confirm.content.decode(), "confirmation page")
    assert ESCAPED in confirm.content.decode()
    refused = operator.post(url("job_move"), {"jids": [jid], "queue": PAYLOADS[1]}, follow=True)
    assert_clean(refused.content.decode(), "error message")
    assert "Nothing was changed" in refused.content.decode()


SOURCES = [
    *sorted((ROOT / "django_qless" / "templates").rglob("*.html")),
    *sorted((ROOT / "django_qless" / "admin").rglob("*.py")),
    *sorted((ROOT / "django_qless" / "templatetags").rglob("*.py")),
]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_escaping_is_switched_off(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for marker in ("|safe", "safeseq", "autoescape off", "mark_safe", "SafeString(", "<script"):
        assert marker not in text, f"{path.name} contains {marker!r}"
