"""The execution ledger: O_APPEND files, one per process, outside the Redis under test.

Each job execution appends JSON lines (`start`, then `end` if it got that far) to
`$QLESS_FAULTS_LEDGER/<pid>.jsonl`. A write() that returned is in the kernel's page cache,
so it survives a SIGKILL of the writer and any fault injected into Redis; set
`QLESS_FAULTS_LEDGER_FSYNC=1` to also fsync each line (only power loss needs that).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django_qless.core import Job

ENV = "QLESS_FAULTS_LEDGER"
FSYNC_ENV = "QLESS_FAULTS_LEDGER_FSYNC"
_open: dict[tuple[int, str], int] = {}


def record(job: Job, event: str) -> None:
    """Append one line for this execution (no-op when no ledger directory is configured)."""
    directory = os.environ.get(ENV)
    if not directory:
        return
    line = json.dumps({"jid": job.jid, "event": event, "pid": os.getpid(),
                       "worker": job.client.worker_name, "t": time.time()})
    fd = _fd(directory)
    os.write(fd, (line + "\n").encode())
    if os.environ.get(FSYNC_ENV) == "1":
        os.fsync(fd)


def _fd(directory: str) -> int:
    """This process's ledger file, opened once (again after a fork: the pid changes)."""
    key = (os.getpid(), directory)
    if key not in _open:
        path = os.path.join(directory, f"{os.getpid()}.jsonl")
        _open[key] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return _open[key]


@dataclass(frozen=True)
class Entry:
    """One ledger line."""

    jid: str
    event: str
    pid: int
    worker: str
    t: float


def read(directory: Path) -> list[Entry]:
    """Every entry of every process, by time."""
    entries: list[Entry] = []
    for path in directory.glob("*.jsonl"):
        # A reader may catch a line while its write() is still being copied in: only
        # newline-terminated lines are complete, the tail is read again next time.
        complete, _, _ = path.read_text().rpartition("\n")
        for line in complete.splitlines():
            if line.strip():
                raw: dict[str, Any] = json.loads(line)
                entries.append(Entry(**raw))
    return sorted(entries, key=lambda entry: entry.t)


def starts(entries: list[Entry]) -> dict[str, list[Entry]]:
    """The `start` entries of each jid (one per execution)."""
    found: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.event == "start":
            found.setdefault(entry.jid, []).append(entry)
    return found
