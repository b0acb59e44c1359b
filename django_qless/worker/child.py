"""What a job's forked child process does (`--isolation process`): run the job, report JSON.

The child is a fork of the worker taken in its job thread (a slot thread with
`--concurrency`), with the job already in memory: nothing about the job is sent to it.
It first resets what the worker's other threads may have held at the fork (`forked`),
ignores the stop signals (the parent decides when its job stops), enforces the soft time
limit with its own SIGALRM, writes crash tracebacks to the file the parent reads back
(`faulthandler`), and reports how the job ended as one JSON document on the pipe before
`os._exit`. It never runs `atexit` handlers or finalizers, so nothing it inherited
(Redis or database sockets) is shut down for the parent; it flushes what the job printed.
A coroutine the job awaits through `coroutines.invoke` runs on asgiref's `async_to_sync`:
the worker's event loop is not in the child.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import signal
import sys
from typing import Any, NoReturn

from django.db import connections

from .. import coroutines
from ..core import Job, RetryJob, hooks
from ..results import NOTHING, exception_path
from . import forked
from .failures import group_for, message_for, retried
from .interrupt import Interrupter
from .shutdown import STOP_SIGNALS
from .targets import Target

#: Exit status of a child that reported its outcome.
REPORTED = 0
#: Exit status of a child that could not even write its report.
UNREPORTED = 70

#: prctl option: the signal this process gets when its parent thread exits.
PR_SET_PDEATHSIG = 1
#: libc's prctl, looked up in the worker: a lookup in the child could wait for the
#: dynamic loader's lock, which another thread may have held at the fork.
_prctl = (ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux")
          else None)

#: True in a job's child process: what it leaves to a background thread is lost at its
#: `os._exit` unless flushed first (a run hook's reports, for instance).
IN_CHILD = False

#: Database connections inherited from the parent, kept referenced until `os._exit` so no
#: finalizer closes them (closing would end the parent's session on the shared socket).
_inherited: list[Any] = []


def run_child(target: Target, job: Job, soft_limit: float | None, report_fd: int,
              fault_fd: int, parent: int) -> NoReturn:
    """Run the job in this (forked) process, report its end on `report_fd`, exit."""
    global IN_CHILD  # noqa: PLW0603 - set once, first thing in the child
    IN_CHILD = True
    code = UNREPORTED
    try:
        _die_with_parent(parent)
        forked.reset([job.client.redis])
        coroutines.install(None)  # the worker's loop, and its thread, stayed in the worker
        faulthandler.enable(file=fault_fd, all_threads=True)
        # The parent asks for the stack this way right before a hard-limit SIGKILL.
        faulthandler.register(signal.SIGUSR1, file=fault_fd, all_threads=True)
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        _forget_databases()
        report = _run(target, job, soft_limit)
        # ASCII: a lone surrogate in a message (a surrogateescape-decoded name) still encodes.
        _write_all(report_fd, json.dumps(report).encode())
        code = REPORTED
    finally:
        forked.flush_streams()
        os._exit(code)


def _run(target: Target, job: Job, soft_limit: float | None) -> dict[str, Any]:
    """Call the job function under the soft limit; its outcome as a JSON-able dict."""
    interrupter = Interrupter(use_signals=True)
    interrupter.install()
    try:
        with hooks.running(job, job.client.worker_name):
            try:
                interrupter.arm(soft_limit)
                value = target.call(job)
            finally:
                interrupter.disarm()
            stored = target.stored(value)
    except BaseException as exc:  # noqa: BLE001 - every way a job can end is reported
        return failure_report(target, job, exc)
    if stored is NOTHING:
        return {"kind": "returned", "kept": False}
    return {"kind": "returned", "kept": True, "value": stored}


def failure_report(target: Target, job: Job, exc: BaseException) -> dict[str, Any]:
    """How a raised exception ends the job, decided here where the real exception is."""
    if isinstance(exc, RetryJob):
        return {"kind": "retry", "delay": exc.delay, "group": exc.group,
                "retry_message": exc.message}
    return {"kind": "raised", "path": exception_path(exc),
            "group": group_for(job.queue_name, exc), "message": message_for(exc),
            "retry": retried(target.retry_policy, exc)}


def _die_with_parent(parent: int) -> None:
    """On Linux, be SIGKILLed when the worker dies (a SIGKILLed worker leaves no orphan job);
    strictly, when the thread that forked it ends (a slot thread ends with its worker)."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(UNREPORTED)


def _forget_databases() -> None:
    """Give the job fresh database connections; the parent's stay untouched."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            _inherited.append(connection.connection)
            connection.connection = None


def _write_all(fd: int, data: bytes) -> None:
    """Write everything (a pipe takes a large report in several writes)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
