"""Code on the docs pages runs as written: jobs.md's enqueue examples against its own jobs."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from django_qless.connection import get_client, reset_clients
from django_qless.signals import job_enqueued
from tests.redis_harness import RedisServer
from tests.support import registry_restored

PAGES = Path(__file__).resolve().parents[2] / "docs" / "pages"
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.M | re.S)


def python_block(page: str, needle: str) -> str:
    """The one fenced Python block of a page that contains `needle`."""
    blocks = [block for block in FENCE.findall((PAGES / page).read_text(encoding="utf-8"))
              if needle in block]
    assert len(blocks) == 1, f"{page}: {len(blocks)} Python blocks contain {needle!r}"
    return blocks[0]


def run_block(page: str, needle: str, scope: dict[str, Any]) -> None:
    """Run a page's block in `scope`, its tracebacks naming the page."""
    code = compile(python_block(page, needle), f"docs/pages/{page}", "exec")
    exec(code, scope)  # noqa: S102 - the docs' own example, run as a reader would


@pytest.fixture
def jobs_module() -> Iterator[ModuleType]:
    """jobs.md's `myapp/qless_jobs.py`, run as that module (its registrations undone after)."""
    module = ModuleType("myapp.qless_jobs")
    with registry_restored():
        run_block("jobs.md", "# myapp/qless_jobs.py", module.__dict__)
        yield module


@pytest.fixture
def enqueued(settings: Any, redis_client: Any, redis_server: RedisServer) -> Iterator[
    list[dict[str, Any]]
]:
    """Every `job_enqueued` sent, with QLESS on the suite's (flushed) redis-server."""
    settings.QLESS = {"URL": redis_server.url}
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    job_enqueued.connect(receiver)
    yield sent
    job_enqueued.disconnect(receiver)
    reset_clients()


@pytest.mark.parametrize("needle", [
    'send_welcome.using(queue="urgent"',  # the Enqueueing section
    ".enqueue_many(",  # Many at once
])
def test_jobs_md_enqueue_examples_run_against_its_send_welcome(
    jobs_module: ModuleType, enqueued: list[dict[str, Any]], needle: str
) -> None:
    send_welcome = jobs_module.send_welcome
    users = [SimpleNamespace(pk=pk) for pk in (1, 2, 3)]
    run_block("jobs.md", needle, {"send_welcome": send_welcome, "user": users[0],
                                  "new_users": users})
    assert enqueued, "the example enqueued nothing"
    signature = inspect.signature(send_welcome.func)
    for sent in enqueued:
        job = get_client().get_job(sent["jid"])
        assert job is not None and job.klass == send_welcome.name == sent["klass"]
        # The worker would call send_welcome(*args, **kwargs): it must bind.
        signature.bind(*job.data["args"], **job.data["kwargs"])


def test_the_hooks_page_example_carries_a_request_id_into_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django_qless.conf import parse  # noqa: PLC0415
    from django_qless.core.hooks import PendingJob  # noqa: PLC0415

    module = ModuleType("myapp.hooks")
    run_block("hooks.md", "# myapp/hooks.py", module.__dict__)
    monkeypatch.setitem(__import__("sys").modules, "myapp.hooks", module)
    scope: dict[str, Any] = {}
    run_block("hooks.md", '"HOOKS": {', scope)
    settings, problems = parse(scope["QLESS"])
    assert problems == () and settings is not None
    assert settings.hooks.enqueue == (module.add_request_id,)
    assert settings.hooks.run == (module.with_request_id,)
    job = PendingJob("a" * 32, "k", "q", "{}")
    assert module.add_request_id(job) is None
    token = module.REQUEST_ID.set("r-42")
    try:
        assert module.add_request_id(job) == {"request_id": "r-42"}
    finally:
        module.REQUEST_ID.reset(token)
    with module.with_request_id(SimpleNamespace(metadata={"request_id": "r-9"})):
        assert module.REQUEST_ID.get() == "r-9"
    assert module.REQUEST_ID.get() is None


def test_the_json_formatter_emits_the_job_fields() -> None:
    import json  # noqa: PLC0415
    import logging  # noqa: PLC0415

    module = ModuleType("myproject.logjson")
    run_block("signals.md", "# myproject/logjson.py", module.__dict__)
    try:
        raise ValueError("boom")
    except ValueError:
        import sys  # noqa: PLC0415

        exc_info = sys.exc_info()
    record = logging.LogRecord("django_qless", logging.ERROR, __file__, 1, "job %s failed",
                               ("j1",), exc_info)
    record.__dict__.update(jid="j1", klass="k", queue="q", attempt=2)
    entry = json.loads(module.JsonFormatter().format(record))
    assert entry["message"] == "job j1 failed" and entry["level"] == "ERROR"
    assert (entry["jid"], entry["klass"], entry["queue"], entry["attempt"]) == ("j1", "k", "q", 2)
    assert "ValueError: boom" in entry["exception"] and "worker" not in entry
