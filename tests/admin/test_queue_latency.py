"""The queue tables show each queue's latency: how long its next job has waited."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client as HttpClient

from tests.admin.conftest import KLASS, url
from tests.conftest import LuaScript


@pytest.mark.parametrize("route", ["overview", "queues"])
def test_a_queue_whose_next_job_waited_90_s_shows_it(
    route: str, lua: LuaScript, viewer: HttpClient, qless_settings: object,
) -> None:
    lua("put", time.time() - 90, "w", "emails", "old", KLASS, "{}", 0)
    lua("put", time.time() - 5, "w", "emails", "new", KLASS, "{}", 0)
    lua("put", time.time(), "w", "later", "soon", KLASS, "{}", 600)
    page = viewer.get(url(route)).content.decode()
    assert "Latency</abbr>" in page
    rows = dict(re.findall(r">(emails|later)</a></th>(.*?)</tr>", page, re.S))
    assert re.search(r'<td class="num qless-nowrap">1 min 3\d s</td>', rows["emails"])
    assert '<td class="num qless-nowrap"></td>' in rows["later"]  # nothing waits there
