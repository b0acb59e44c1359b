"""Secrets in failure messages, tracebacks and history never reach an admin page.

A real worker (`qless_worker --burst`, in this process) runs jobs that fail or log with
secrets in their text: `password=...` pairs, a URL's password, a token matching a pattern
configured in `QLESS['ADMIN']['MASKED_PATTERNS']`. Then every admin page reachable from the
index is crawled, as staff with and without `view_job_data`, and no secret may appear.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client as HttpClient
from django.urls import reverse

from django_qless.conf import DEFAULT_MASKED_PATTERNS
from django_qless.connection import get_client, reset_clients
from django_qless.core import Client, Job
from django_qless.decorators import qless_job
from tests.redis_harness import RedisServer

pytestmark = [pytest.mark.faults, pytest.mark.django_db]

RUN = uuid.uuid4().hex[:8]
#: Each secret is unique to this run, so finding it on a page can only be a leak.
PASSWORD = f"hunter2-{RUN}"
URL_PASSWORD = f"urlpw-{RUN}"
TOKEN = f"tok_{RUN}deadbeef"
LOG_PASSWORD = f"logpw-{RUN}"
API_KEY = f"key-{RUN}"
ARG_PASSWORD = f"argpw-{RUN}"
SECRETS = (PASSWORD, URL_PASSWORD, TOKEN, LOG_PASSWORD, API_KEY, ARG_PASSWORD)
#: Text of the failure that is no secret: operators with `view_job_data` must still see it.
VISIBLE = f"card declined {RUN}"
#: Crawl at most this many pages per user (the seeded world has far fewer).
MAX_PAGES = 300
QUEUE = "leaky"


class PaymentError(Exception):
    """The failure the leaky job raises."""


@qless_job(name="faults.leaky", queue=QUEUE, retries=0)
def leaky(password: str) -> None:
    """Fail with secrets in the message (and so in the traceback and failure)."""
    raise PaymentError(
        f"{VISIBLE}: password={PASSWORD} via https://shop:{URL_PASSWORD}@pay.example/ "
        f"(token {TOKEN})"
    )


@qless_job(name="faults.chatty", queue=QUEUE, takes_job=True)
def chatty(job: Job) -> None:
    """Log secrets into the job's history (message and data), then complete."""
    job.log(f"login with password: {LOG_PASSWORD}", {"api_key": API_KEY, "note": f"{TOKEN}"})


@pytest.fixture
def seeded(settings: Any, server: RedisServer) -> Iterator[Client]:
    """Failed and logged jobs run by a real worker; QLESS masks the test's token pattern."""
    settings.QLESS = {
        "URL": server.url,
        # The test runs inside a database transaction that never commits.
        "ENQUEUE_ON_COMMIT": False,
        "ADMIN": {"MASKED_PATTERNS": [*DEFAULT_MASKED_PATTERNS, r"\btok_[0-9a-f]{16}\b"]},
    }
    client = get_client()
    for _ in range(3):
        leaky.enqueue(password=ARG_PASSWORD)
    chatty.enqueue()
    call_command("qless_worker", QUEUE, "--burst")
    yield client
    reset_clients()


def user(name: str, *perms: str) -> HttpClient:
    """A logged-in staff user holding the qless permissions `perms`."""
    staff = User.objects.create_user(name, password="pw", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_qless", codename__in=perms)
    )
    http = HttpClient()
    http.force_login(staff)
    return http


def crawl(http: HttpClient) -> dict[str, str]:
    """Every qless admin page reachable by GET from the app index: URL -> its text."""
    start = reverse("admin:django_qless_overview", kwargs={"alias": "default"})
    prefix = reverse("admin:index") + "django_qless/"
    pages: dict[str, str] = {}
    queue = [start, reverse("admin:index")]
    while queue and len(pages) < MAX_PAGES:
        link = queue.pop(0)
        if link in pages:
            continue
        response = http.get(link)
        if response.status_code != 200:
            pages[link] = ""
            continue
        body = unescape(response.content.decode())
        pages[link] = body
        for found in re.findall(r'href="([^"#]+)"', body):
            if found.startswith(prefix) and found not in pages:
                queue.append(found)
    return pages


def test_no_secret_reaches_any_admin_page(seeded: Client, figures: dict[str, Any]) -> None:
    failed = seeded.failed()
    assert failed == {f"{QUEUE}-PaymentError": 3}
    # The secrets really are in Redis: only the pages mask them.
    [jid] = seeded.failed_jids(f"{QUEUE}-PaymentError", 0, 1)[1]
    job = seeded.get_job(jid)
    assert job is not None and job.failure is not None and PASSWORD in job.failure.message

    checked = 0
    for name, perms in [("operator", ("view_qless", "view_job_data", "retry_jobs")),
                        ("viewer", ("view_qless",))]:
        pages = crawl(user(name, *perms))
        text = "\n".join(pages.values())
        assert len(pages) >= 10, sorted(pages)
        job_pages = [body for link, body in pages.items() if "/job/default/j/" in link]
        assert len(job_pages) == 4, "every seeded job page was crawled"
        leaks = {secret for secret in SECRETS if secret in text}
        assert not leaks, f"{name} sees {leaks}"
        if name == "operator":
            # Masked, not blanked: the failure's harmless text and the mask are shown.
            assert VISIBLE in text and "password=********" in text and "********@pay" in text
            assert "Traceback (most recent call last)" in text
        else:
            assert VISIBLE not in text and "Traceback (most recent" not in text
            assert "Message and traceback hidden" in text and "PaymentError" in text
        checked += len(pages) * len(SECRETS)
        figures[f"{name}_pages"] = len(pages)
    figures.update(secrets=len(SECRETS), checks=checked, leaks=0)
