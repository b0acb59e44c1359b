"""`qless_worker --reload`: a parent that runs the worker in a child and restarts it on edits.

The parent runs the same command line again as a child (marked by `PARENT_ENV`) and waits
for it. The child runs the worker in its main thread, with its usual signal handlers, and
Django's autoreloader in a thread: when a watched file changes, the worker is asked to stop
gracefully (SIGUSR2, as a supervisor would) and the child exits with `RESTART`, which makes
the parent start a new child.

Signals: the parent installs its handlers whatever it inherited (a shell that ignores
SIGINT leaves it ignored in its background jobs). The first SIGTERM/SIGINT/SIGQUIT is
passed on to the child as SIGUSR2 (a terminal's Ctrl-C reaches both, and only the
child's own copy counts); a second one SIGKILLs the child and the parent exits with 1.
The child dies with its parent: on Linux the kernel sends it SIGTERM when the parent
dies (`PR_SET_PDEATHSIG`), elsewhere the worker's monitor notices the new parent pid.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from django.utils import autoreload

from ..management.early_signals import EARLY
from .shutdown import FORCED_EXIT, GRACEFUL, SUPERVISOR_STOP

logger = logging.getLogger("django_qless.worker")

#: Set in the child's environment to the parent's pid.
PARENT_ENV = "DJANGO_QLESS_RELOAD_PARENT"
#: Exit status of a child that stopped because code changed (Django's own convention).
RESTART = 3
#: How often the parent looks at its child and at pending signals.
TICK = 0.05
#: prctl option asking the kernel to signal this process when its parent dies (Linux).
PR_SET_PDEATHSIG = 1


def run_with_reloader(run: Callable[[int | None], int]) -> int:
    """Run `run(parent_pid)` in a child restarted on code changes; returns the exit status.

    `run` gets the parent's pid in the child (to stop when the parent is gone).
    """
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is not None:
        return _child(run, int(parent))
    return _Parent().run()


class _Parent:
    """Starts the child, passes stops on to it, restarts it after a code change."""

    def __init__(self) -> None:
        self.signals = 0
        self.signame = ""
        self.child: subprocess.Popen[bytes] | None = None

    def run(self) -> int:
        """Run children until one exits for another reason than a code change."""
        previous = {signum: signal.signal(signum, self._on_signal) for signum in GRACEFUL}
        EARLY.hand_over(self.receive)  # a stop received during start-up: no child
        try:
            while not self.signals:
                status = self._run_child()
                if status != RESTART or self.signals:
                    return abs(status)
                logger.info("qless worker: code changed; restarting the worker")
            logger.info("qless worker: stopped (signal %s) before starting", self.signame)
            return 0
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _run_child(self) -> int:
        """Start one child and wait for it, passing stops on; its exit status."""
        env = {**os.environ, PARENT_ENV: str(os.getpid())}
        self.child = child = subprocess.Popen(  # noqa: S603 - this very command line again
            autoreload.get_child_arguments(), env=env,
        )
        told = False
        while child.poll() is None:
            if self.signals > 1:
                os.write(2, f"qless worker: second signal ({self.signame}), killing the "
                            "reloaded worker now\n".encode())
                child.kill()
                child.wait()
                return FORCED_EXIT
            if self.signals and not told:
                told = True
                _send(child, SUPERVISOR_STOP)
            time.sleep(TICK)
        return child.returncode

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Count the stop; the loop passes it on."""
        self.receive(signum)

    def receive(self, signum: int) -> None:
        """Count a stop signal; SIGUSR2 stops too but never counts as a second one."""
        self.signals = max(self.signals, 1) if signum == SUPERVISOR_STOP else self.signals + 1
        self.signame = signal.Signals(signum).name


def _send(child: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the child unless it is already gone."""
    try:
        child.send_signal(signum)
    except ProcessLookupError:
        pass


def _child(run: Callable[[int | None], int], parent: int) -> int:
    """In the child: die with the parent, watch the code, run the worker in this thread."""
    if not _die_with_parent(parent):
        return 0
    changed = threading.Event()

    def on_change(sender: Any, file_path: Any, **kwargs: Any) -> bool:
        if not changed.is_set():
            logger.info("qless worker: %s changed; stopping to reload", file_path)
            changed.set()
            os.kill(os.getpid(), SUPERVISOR_STOP)
        return True  # handled: Django's reloader must not exit from its own thread

    autoreload.file_changed.connect(on_change, weak=False)
    reloader = autoreload.get_reloader()
    watcher = threading.Thread(target=reloader.run, args=(threading.main_thread(),),
                               name="qless-reloader", daemon=True)
    watcher.start()
    try:
        status = run(parent)
    finally:
        reloader.stop()
    return RESTART if changed.is_set() else status


def _die_with_parent(parent: int) -> bool:
    """Have the kernel SIGTERM us when the parent dies (Linux); False if it is already gone."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    return os.getppid() == parent
