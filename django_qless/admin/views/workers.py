"""Workers: the list, one worker's jobs, and forgetting a worker."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse

from ... import models
from .. import audit
from ..env import Env
from ..feedback import invalid
from ..forms import WorkerForm
from ..pagination import paginate_sequence
from ..queries import worker_jobs
from .jobs import list_context


def worker_list(env: Env) -> HttpResponse:
    """Workers seen recently, most recently active first, with their job counts."""
    page = paginate_sequence(env.request, env.client.workers.counts())
    return env.render("workers.html", {"page": page}, title="Workers", section="workers")


def worker_page(env: Env, name: str) -> HttpResponse:
    """The jobs a worker holds: live leases first, then expired ones."""
    held = worker_jobs(env.client, name)
    jids = [*held.jobs, *held.stalled]
    stalled = set(held.stalled)
    context: dict[str, Any] = {
        **list_context(env, paginate_sequence(env.request, jids)),
        "worker": name,
        "stalled_count": len(stalled),
        "running_count": len(jids) - len(stalled),
    }
    crumbs = [("Workers", env.url("workers")), (name, None)]
    return env.render(
        "worker.html", context, title=f"Worker {name}", section="workers", crumbs=crumbs
    )


def forget(env: Env) -> HttpResponse:
    """Drop a worker from the list (its jobs keep their leases until they expire)."""
    form = WorkerForm(env.request.POST)
    if not form.is_valid():
        return invalid(env, form, env.url("workers"))
    name = form.cleaned_data["name"]
    env.client.workers.deregister(name)
    audit.record(env, models.Worker, [(name, f"Forgot worker {name}")], deletion=True)
    messages.success(env.request, f"Forgot worker {name}.")
    return env.redirect_back(env.url("workers"))
