"""Views for the debug toolbar tests: pages that enqueue jobs (no import of the toolbar)."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse

from django_qless.enqueue import observers
from tests.testapp.models import Note
from tests.testapp.qless_jobs import add, send_welcome

#: The jids each view enqueued last, for the tests to look for in the panel.
ENQUEUED: dict[str, list[str]] = {}
#: How many listeners the enqueue path had while each view ran.
LISTENING: dict[str, int] = {}
PAGE = "<html><body><p>{}</p></body></html>"


def single(request: HttpRequest) -> HttpResponse:
    """One job put now, with the definition's priority and tags, and one delayed."""
    LISTENING["single"] = len(observers.LISTENERS)
    ENQUEUED["single"] = [send_welcome.enqueue(7), add.using(delay=30).enqueue(1, 2)]
    return HttpResponse(PAGE.format("single"))


def bulk(request: HttpRequest) -> HttpResponse:
    """Three jobs in one `enqueue_many`."""
    ENQUEUED["bulk"] = add.enqueue_many([((i, i), {}) for i in range(3)])
    return HttpResponse(PAGE.format("bulk"))


def atomic(request: HttpRequest) -> HttpResponse:
    """A job enqueued in a transaction that commits, then one in a transaction rolled back."""
    with transaction.atomic():
        Note.objects.create(text="read by the job")
        jids = [add.enqueue(1, 1)]
    try:
        with transaction.atomic():
            jids.append(add.using(queue="dropped").enqueue(2, 2))
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    ENQUEUED["atomic"] = jids
    return HttpResponse(PAGE.format("atomic"))
