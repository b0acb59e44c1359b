"""The documentation site: it builds with warnings as errors, has every required page with
real content, and names the options, settings, signals and checks the code defines."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"
CONFIG = DOCS / "mkdocs.yml"

#: Topic the site must cover -> the page that covers it.
REQUIRED = {
    "home": "index.md",
    "install": "install.md",
    "configuration (settings, django-environ, connections, Sentinel, TLS)": "configuration.md",
    "defining and enqueueing jobs (registry, on-commit, uniqueness, retries)": "jobs.md",
    "the worker (options, signals, exit status)": "worker.md",
    "deployment (systemd, Kubernetes, sizing, dead workers)": "deployment.md",
    "recurring jobs": "recurring.md",
    "reliability under faults": "reliability.md",
    "the admin, with screenshots": "admin.md",
    "Django signals": "signals.md",
    "testing your jobs": "testing.md",
    "compatibility with other qless clients and the Lua script": "compatibility.md",
    "Redis requirements": "redis.md",
    "performance figures": "performance.md",
    "troubleshooting": "troubleshooting.md",
    "Django Tasks (setup, states, results, moving from other backends)": "tasks.md",
    "security and platforms": "security.md",
    "coming from Celery, RQ or huey": "migrating.md",
    "versioning and deprecation": "versioning.md",
    "hooks (enqueue metadata, run wrappers)": "hooks.md",
    "Sentry (transactions, failures, traces, Crons)": "sentry.md",
    "observability (Sentry, OpenTelemetry, Prometheus, logs)": "observability.md",
}
#: Prose words (outside code blocks) a page needs to count as more than a stub.
MIN_WORDS = 300
#: Phrases each page must contain: the sub-topics the site promises.
MUST_MENTION = {
    "configuration.md": ["django-environ", "CONNECTIONS", "redis+sentinel://", "rediss://"],
    "jobs.md": ["qless_jobs", "transaction.atomic()", "Unique jobs", "RetryPolicy", "RetryJob"],
    "worker.md": ["SIGTERM", "SIGKILL", "Exit status", "--shutdown-timeout"],
    "deployment.md": ["[Service]", "KillMode=mixed", "terminationGracePeriodSeconds",
                      "livenessProbe", "readinessProbe", "Sizing", "When a worker dies"],
    "testing.md": ["IMMEDIATE", "burst=True", "clock"],
    "redis.md": ["6.2", "appendfsync", "noeviction", "Redis Cluster"],
    "admin.md": ["images/admin-overview.png", "images/admin-job-failed.png"],
    "compatibility.md": ["qless-py", "qless.lua", "script_text()"],
    "performance.md": ["bench/"],
    "tasks.md": ["django_qless.tasks.QlessBackend", "django-qless[tasks]", "INSTALLED_APPS",
                 "aenqueue", "run_after", "TaskResultDoesNotExist", "jobs-history-count",
                 "takes_context", "attempt", "task_enqueued", "task_started", "task_finished",
                 "django-tasks-db", "django-tasks-rq", "@shared_task"],
    "security.md": ["EVALSHA", "SCRIPT LOAD", "PUBLISH", "SUBSCRIBE", "INFO", "TIME",
                    "rediss://", "MASKED_DATA_KEYS", "jobs-history", "pickle", "fork",
                    "SIGALRM", "Windows", "installed app"],
    "migrating.md": ["Celery", "RQ", "huey", "acks_late", "max-concurrency", "depends",
                     "recur=", "Flower"],
    "sentry.md": ["QlessIntegration", "DjangoIntegration", "queue.process", "mechanism",
                  "--concurrency", "MASKED_PATTERNS", "monitor_schedules", "django_qless[sentry]"],
    "observability.md": ["QlessIntegration", "QlessInstrumentor().instrument()",
                         'include("django_qless.urls")', "qless_metrics", "JsonFormatter",
                         "jid", "QlessJobsPanel", '"HOOKS"', "sentry.md", "opentelemetry.md",
                         "metrics.md", "signals.md", "debug-toolbar.md", "hooks.md"],
    "versioning.md": ["semantic versioning", "DeprecationWarning", "public API",
                      "at least one minor release", "qless-core"],
}
#: API reference page -> the module whose `__all__` it must render, and the modules the
#: names are documented under (a re-exported name is documented where it is defined).
REFERENCE = {
    "django_qless.html": ("django_qless", ["django_qless"]),
    "tasks.html": ("django_qless.tasks", ["django_qless.tasks"]),
    "hooks.html": ("django_qless.hooks", ["django_qless.hooks", "django_qless.core.hooks"]),
    "exceptions.html": ("django_qless.exceptions",
                        ["django_qless.exceptions", "django_qless.core.exceptions"]),
}
#: The core client's names the reference documents (the rest of core.__all__ is plumbing).
CORE_REFERENCE = ["Client", "Queue", "Job", "RecurringJob", "Config", "Workers", "Event",
                  "EventListener"]


def prose_words(markdown: str) -> int:
    """Words outside fenced code blocks."""
    without_code = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    return len(re.findall(r"[A-Za-z][A-Za-z'-]+", without_code))


def page(name: str) -> str:
    return (PAGES / name).read_text(encoding="utf-8")


def test_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(CONFIG), "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if "No module named mkdocs" in result.stderr:
        pytest.fail("mkdocs is missing: python -m pip install -e '.[test]' installs it")
    # Strict mode turns broken links, missing anchors, missing images and pages left out
    # of the nav into errors (see `validation:` in docs/mkdocs.yml).
    assert result.returncode == 0, result.stdout + result.stderr
    for name in REQUIRED.values():
        assert (site / name.replace(".md", ".html")).is_file(), name
    assert (site / "images" / "admin-overview.png").is_file()
    assert (site / "changelog.html").is_file()
    check_reference(site / "reference")


def check_reference(built: Path) -> None:
    """Every public name has its own anchor in the generated API reference."""
    for html, (module_name, homes) in REFERENCE.items():
        text = (built / html).read_text(encoding="utf-8")
        module = importlib.import_module(module_name)
        names = [name for name in module.__all__ if not name.startswith("__")]
        missing = [name for name in names
                   if not any(f'id="{home}.{name}"' in text for home in homes)]
        assert not missing, f"reference/{html} lacks {missing}"
    core = (built / "core.html").read_text(encoding="utf-8")
    assert not [n for n in CORE_REFERENCE if f'id="django_qless.core.{n}"' not in core]
    assert 'id="django_qless.core.commands.put"' in core


@pytest.mark.parametrize("topic", sorted(REQUIRED))
def test_required_page_exists_and_is_not_a_stub(topic: str) -> None:
    name = REQUIRED[topic]
    assert (PAGES / name).is_file(), f"{topic}: docs/pages/{name} is missing"
    words = prose_words(page(name))
    assert words >= MIN_WORDS, f"{topic}: docs/pages/{name} has {words} words of prose"
    assert f" {name}" in CONFIG.read_text(encoding="utf-8"), f"{name} is not in the nav"
    for phrase in MUST_MENTION.get(name, []):
        assert phrase.lower() in page(name).lower(), f"{name} does not mention {phrase!r}"


def test_every_worker_option_is_documented_and_none_is_invented() -> None:
    from django_qless.management.commands.qless_worker import Command

    parser = Command().create_parser("manage.py", "qless_worker")
    defined = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    text = page("worker.md")
    ours = {s for a in parser._actions if a.dest not in BASE_DESTS for s in a.option_strings
            if s.startswith("--")}
    missing = sorted(s for s in ours if s not in text)
    assert not missing, f"worker.md does not document {missing}"
    invented = sorted(set(re.findall(r"`(--[a-z][a-z-]+)", text)) - defined)
    assert not invented, f"worker.md documents options qless_worker lacks: {invented}"


def test_every_qless_recur_option_is_documented_and_none_is_invented() -> None:
    from django_qless.management.commands.qless_recur import Command

    parser = Command().create_parser("manage.py", "qless_recur")
    defined = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    ours = {s for a in parser._actions if a.dest not in BASE_DESTS for s in a.option_strings}
    text = page("recurring.md")
    assert not sorted(s for s in ours if s not in text)
    mentioned = set(re.findall(r"qless_recur[^`\n]*?(--[a-z][a-z-]+)", text))
    mentioned |= set(re.findall(r"^\| `(--[a-z][a-z-]+)`", text, flags=re.M))
    assert not sorted(mentioned - defined)


def test_every_setting_key_is_documented() -> None:
    from django_qless import conf

    text = page("configuration.md")
    keys = {*conf.TOP_KEYS, *conf.WORKER_KEYS, *conf.CONNECTION_KEYS, *conf.ADMIN_KEYS,
            *conf.HOOK_KEYS}
    missing = sorted(key for key in keys if f"`{key}`" not in text)
    assert not missing, f"configuration.md does not document {missing}"
    for name in conf.DEFAULT_MASKED_DATA_KEYS:
        assert f"`{name}`" in text


def documented_default(text: str, key: str) -> str:
    """The default column of a `| `KEY` | type | `default` | ... |` row."""
    match = re.search(rf"^\| `{key}` \| [^|]+ \| `([^`]+)` \|", text, flags=re.M)
    assert match, f"no reference row for {key}"
    return match.group(1)


def shown(value: object) -> str:
    """A default as the docs write it: JSON strings, Python constants, whole numbers bare."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_documented_defaults_match_the_code() -> None:
    from django_qless import conf

    settings, problems = conf.parse({})
    assert settings is not None and not problems
    text = page("configuration.md")
    top = {"URL": settings.connections["default"].url, "DEFAULT_QUEUE": settings.default_queue,
           "IMMEDIATE": settings.immediate, "ENQUEUE_ON_COMMIT": settings.enqueue_on_commit,
           "MAX_PAYLOAD_BYTES": settings.max_payload_bytes, "HEARTBEAT": settings.heartbeat}
    worker = settings.worker
    nested = {"STRATEGY": worker.strategy, "PROCESSES": worker.processes,
              "MAX_JOBS": worker.max_jobs, "MAX_MEMORY_MB": worker.max_memory_mb,
              "TIME_LIMIT": worker.time_limit, "SHUTDOWN_TIMEOUT": worker.shutdown_timeout,
              "POLL_INTERVAL": worker.poll_interval}
    for key, value in {**top, **nested}.items():
        assert documented_default(text, key) == shown(value), key


def test_every_recurring_setting_key_is_documented() -> None:
    from django_qless.recurring.declarations import SETTING_KEYS

    text = page("recurring.md")
    missing = sorted(key for key in SETTING_KEYS if f"`{key}`" not in text)
    assert not missing, f"recurring.md does not document QLESS['RECURRING'] keys {missing}"


def test_every_signal_and_its_arguments_are_documented() -> None:
    from django_qless import signals

    text = page("signals.md")
    for name in signals.__all__:
        assert f"`{name}`" in text, name
    for argument in ("jid", "queue", "klass", "connection", "priority", "tags", "delay",
                     "immediate", "worker", "duration", "exception", "group", "reason",
                     "queues", "attempt"):
        assert f"`{argument}`" in text, argument


def test_every_check_id_in_the_code_is_documented() -> None:
    sources = [*sorted((ROOT / "django_qless" / "conf").glob("*.py")),
               ROOT / "django_qless" / "checks.py",
               *sorted((ROOT / "django_qless" / "recurring").glob("*.py"))]
    ids = set()
    for source in sources:
        text = source.read_text(encoding="utf-8")
        ids |= set(re.findall(r"django_qless\.([EW]\d{3})", text))
        ids |= set(re.findall(r"error\(\s*\"([EW]\d{3})\"", text))
    docs = page("configuration.md") + page("recurring.md")
    documented = set(re.findall(r"[EW]\d{3}", docs))
    # A range such as `E020`–`E023` documents the ids in between.
    for low, high in re.findall(r"E(\d{3})`?\s*[–-]\s*`?(?:django_qless\.)?E(\d{3})", docs):
        documented |= {f"E{n:03d}" for n in range(int(low), int(high) + 1)}
    assert ids, "no check ids found in the code"
    assert not sorted(ids - documented), f"undocumented check ids: {sorted(ids - documented)}"


def test_readme_links_every_page_and_each_link_resolves() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/pages/[^)#]+)", readme)
    assert {Path(link).name for link in links} >= set(REQUIRED.values())
    for link in links:
        assert (ROOT / link).is_file(), link


#: Options every Django command has; the docs need not repeat them.
BASE_DESTS = {
    "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
    "force_color", "skip_checks",
}


def test_every_tasks_option_is_documented_and_none_is_invented() -> None:
    from django_qless.tasks.options import _KEYS

    text = page("tasks.md")
    rows = set(re.findall(r"^\| `([A-Z_]+)` \|", text, flags=re.M))
    assert rows == set(_KEYS), f"tasks.md OPTIONS rows {sorted(rows)} != {sorted(_KEYS)}"


def test_tasks_state_table_matches_the_backend() -> None:
    from django_qless.tasks import STATUS_BY_STATE

    rows = dict(re.findall(r"^\| `([a-z]+)` \| `([A-Z]+)` \|", page("tasks.md"), flags=re.M))
    assert rows == {state: str(status) for state, status in STATUS_BY_STATE.items()}


def test_changelog_has_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert "## [Unreleased]" in text
    for heading in ("### Added", "### Changed", "### Removed"):
        assert heading in text, heading
