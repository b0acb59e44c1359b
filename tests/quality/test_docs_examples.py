"""Code on the docs pages runs as written: jobs.md's enqueue examples against its own jobs,
the hooks and JSON logging examples, and each set-up of observability.md."""

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


def run_script(script: str) -> str:
    """Run `script` in a fresh interpreter at the project's root (for examples that set up
    process-wide state: a Sentry client, a tracer provider, logging); its stdout."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    root = PAGES.parents[1]
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(root)
    result = subprocess.run([sys.executable, "-c", script], cwd=root, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


#: Runs a docs page's block in a fresh process: `block(page, needle)` gives its code.
PRELUDE = f"""
import re
from pathlib import Path
FENCE = re.compile({FENCE.pattern!r}, flags=re.M | re.S)

def block(page, needle):
    found = [b for b in FENCE.findall(Path({str(PAGES)!r}, page).read_text(encoding="utf-8"))
             if needle in b]
    assert len(found) == 1, (page, needle, len(found))
    return found[0]
"""


def test_the_observability_pages_sentry_set_up_adds_the_integration_and_its_hooks() -> None:
    script = PRELUDE + """
import sentry_sdk
from sentry_sdk.transport import Transport

class Nowhere(Transport):
    def capture_envelope(self, envelope):
        pass

real_init = sentry_sdk.init
def init(**options):  # the page's placeholder DSN made valid, nothing sent
    assert options["dsn"] == "https://..."
    return real_init(**{**options, "dsn": "https://key@sentry.invalid/1", "transport": Nowhere})
sentry_sdk.init = init
exec(compile(block("observability.md", "QlessIntegration()"), "observability.md", "exec"), {})
from django_qless.core import hooks
from django_qless.integrations.sentry import QlessIntegration
from sentry_sdk.integrations.django import DjangoIntegration
client = sentry_sdk.get_client()
assert client.get_integration(QlessIntegration) and client.get_integration(DjangoIntegration)
print(len(hooks.enqueue_hooks()), len(hooks.run_hooks()))
"""
    assert run_script(script).split() == ["1", "1"]


def test_the_observability_pages_opentelemetry_set_up_traces_puts() -> None:
    script = PRELUDE + """
import sys, types
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
# The OTLP exporter (not installed here) replaced by the SDK's in-memory one.
exported = InMemorySpanExporter()
name = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
module = types.ModuleType(name)
module.OTLPSpanExporter = lambda: exported
sys.modules[name] = module
exec(compile(block("observability.md", "QlessInstrumentor().instrument()"),
             "observability.md", "exec"), {})
from opentelemetry import trace
from django_qless.core import hooks
from django_qless.core.hooks import PendingJob
(send,) = hooks.enqueue_hooks()
entries = send(PendingJob("a" * 32, "myapp.qless_jobs.send_welcome", "emails", "{}"))
trace.get_tracer_provider().force_flush()
(span,) = exported.get_finished_spans()
assert span.name == "send emails" and "traceparent" in entries["otel"], entries
print(len(hooks.run_hooks()), span.attributes["messaging.message.id"] == "a" * 32)
"""
    assert run_script(script).split() == ["1", "True"]


def test_the_observability_pages_urls_serve_the_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os  # noqa: PLC0415

    from django.urls import resolve  # noqa: PLC0415

    from django_qless.conf import parse  # noqa: PLC0415
    from django_qless.metrics.views import metrics  # noqa: PLC0415

    monkeypatch.setenv("QLESS_METRICS_TOKEN", "a-token-of-24-characters")
    scope: dict[str, Any] = {"os": os}
    run_block("observability.md", 'include("django_qless.urls")', scope)
    urlconf = ModuleType("urls")
    urlconf.urlpatterns = scope["urlpatterns"]  # type: ignore[attr-defined]
    assert resolve("/qless/metrics", urlconf=urlconf).func is metrics
    settings, problems = parse(scope["QLESS"])
    assert problems == () and settings is not None
    assert settings.metrics_token == "a-token-of-24-characters"


def test_the_observability_pages_debug_toolbar_panel_is_the_panel() -> None:
    from django.utils.module_loading import import_string  # noqa: PLC0415

    from django_qless.integrations.debug_toolbar import QlessJobsPanel  # noqa: PLC0415

    scope: dict[str, Any] = {}
    run_block("observability.md", "DEBUG_TOOLBAR_PANELS", scope)
    assert import_string(scope["DEBUG_TOOLBAR_PANELS"][-1]) is QlessJobsPanel


def test_the_observability_pages_logging_and_run_hook_put_the_jid_on_every_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django_qless.conf import parse  # noqa: PLC0415

    scope: dict[str, Any] = {}
    observe = ModuleType("myapp.observe")
    run_block("observability.md", "# myapp/observe.py", observe.__dict__)
    monkeypatch.setitem(__import__("sys").modules, "myapp.observe", observe)
    run_block("observability.md", '"root": {"handlers": ["json"]', scope)
    run_block("observability.md", '"HOOKS": {"RUN"', scope)
    settings, problems = parse(scope["QLESS"])
    assert problems == () and settings is not None
    assert settings.hooks.run == (observe.job_context,)
    # The LOGGING of both blocks, applied in a process of its own, with signals.md's formatter.
    script = PRELUDE + """
import io, json, logging, logging.config, sys, types
for name, page, needle in [("myproject.logjson", "signals.md", "# myproject/logjson.py"),
                           ("myapp.observe", "observability.md", "# myapp/observe.py")]:
    module = types.ModuleType(name)
    exec(compile(block(page, needle), page, "exec"), module.__dict__)
    package, _, leaf = name.rpartition(".")
    setattr(sys.modules.setdefault(package, types.ModuleType(package)), leaf, module)
    sys.modules[name] = module
scope = {}
exec(block("observability.md", '"root": {"handlers": ["json"]'), scope)
exec(block("observability.md", '"HOOKS": {"RUN"'), scope)
logging.config.dictConfig(scope["LOGGING"])
written = io.StringIO()
(handler,) = logging.getLogger().handlers
handler.setStream(written)
observe = sys.modules["myapp.observe"]
run = types.SimpleNamespace(jid="j1")
with observe.job_context(run):
    logging.getLogger("myapp.billing").info("charged")
logging.getLogger("django_qless").info("qless job k j2 enqueued in q",
                                       extra={"jid": "j2", "klass": "k", "queue": "q"})
logging.getLogger("myapp.billing").info("outside")
for line in written.getvalue().splitlines():
    entry = json.loads(line)
    print(entry["message"].split()[-1], entry.get("jid"))
"""
    assert run_script(script).splitlines() == ["charged j1", "q j2", "outside None"]
