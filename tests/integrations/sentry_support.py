"""A real Sentry client per test, sending to a file instead of the network.

`EnvelopeFile` is a `sentry_sdk.transport.Transport` that appends every envelope item as
one JSON line, so what a forked job child (`--isolation process`) sends is read back too.
`SentryRun.init` starts a fresh client; the fixture puts the previous one back after the
test, and takes the integration's hooks away, so other tests never see them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.logging import LoggingIntegration
from sentry_sdk.transport import Transport

from django_qless.integrations.sentry import QlessIntegration
from django_qless.integrations.sentry.integration import add_hooks, remove_hooks


class EnvelopeFile(Transport):
    """Keeps envelope items (type, payload, pid) until a flush appends them to a file.

    As the SDK's HTTP transport, which sends from a background thread, it loses what is
    not flushed when a process ends with `os._exit` (a job's child does).
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.pending: list[str] = []
        self.lock = threading.Lock()

    def capture_envelope(self, envelope: Envelope) -> None:
        """Keep the items until the next flush."""
        lines = []
        for item in envelope.items:
            payload = item.payload.json
            if payload is None and item.payload.bytes:
                payload = json.loads(item.payload.bytes)
            lines.append(json.dumps({"type": item.type, "payload": payload,
                                     "pid": os.getpid()}, default=str))
        with self.lock:
            self.pending += lines

    def flush(self, timeout: float, callback: Any = None) -> None:
        """Append what was kept to the file (one write: processes do not interleave)."""
        with self.lock:
            lines, self.pending = self.pending, []
        if lines:
            with self.path.open("a") as sink:
                sink.write("".join(line + "\n" for line in lines))


class SentryRun:
    """Starts clients writing to one file and reads what they sent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.touch()

    def init(self, integrations: list[Any] | None = None, **options: Any) -> None:
        """A fresh client with these integrations (None: `QlessIntegration()`), tracing all."""
        options.setdefault("traces_sample_rate", 1.0)
        # Only what a test names is patched into the process (redis-py, for one, is not).
        options.setdefault("auto_enabling_integrations", False)
        chosen = [QlessIntegration()] if integrations is None else integrations
        sentry_sdk.init(dsn="https://key@sentry.invalid/1", transport=EnvelopeFile(self.path),
                        integrations=chosen, **options)
        # `setup_once` ran in an earlier test (once per process): add the hooks again.
        add_hooks()

    def init_without_dedupe(self, **options: Any) -> None:
        """Logging and qless only: without the deduplication of the defaults, which would
        hide a second event of the same exception object (not of every duplicate)."""
        # Not `disabled_integrations`: the SDK applies it only before a first setup.
        self.init([LoggingIntegration(), QlessIntegration()], default_integrations=False,
                  **options)

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The payloads sent of one type ("event", "transaction", "check_in"), each with the
        pid of the process that sent it as `_pid`."""
        sentry_sdk.flush()
        found = []
        for line in self.path.read_text().splitlines():
            item = json.loads(line)
            if item["type"] == kind:
                found.append({**item["payload"], "_pid": item["pid"]})
        return found

    def events(self) -> list[dict[str, Any]]:
        """The error events."""
        return self.items("event")

    def transactions(self, op: str = "queue.process") -> list[dict[str, Any]]:
        """The transactions of one op (the jobs' by default)."""
        return [t for t in self.items("transaction") if trace(t).get("op") == op]

    def by_jid(self) -> dict[str, dict[str, Any]]:
        """The jobs' transactions by jid (each jid once)."""
        found: dict[str, dict[str, Any]] = {}
        for transaction in self.transactions():
            jid = transaction["tags"]["qless.jid"]
            assert jid not in found, f"two transactions for job {jid}"
            found[jid] = transaction
        return found


def trace(payload: dict[str, Any]) -> dict[str, Any]:
    """The trace context of an event or transaction."""
    found: dict[str, Any] = payload.get("contexts", {}).get("trace", {})
    return found


def crumbs(payload: dict[str, Any]) -> list[str]:
    """The messages of an event's breadcrumbs."""
    values = payload.get("breadcrumbs", {}).get("values", [])
    return [crumb.get("message") or "" for crumb in values]


def restored_sentry(path: Path) -> Iterator[SentryRun]:
    """A `SentryRun`; afterwards the previous client is back and the hooks are gone."""
    previous = sentry_sdk.get_client()
    try:
        with sentry_sdk.isolation_scope():
            yield SentryRun(path)
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(previous)
        remove_hooks()
