"""`--processes N`: a parent that forks N serial workers and keeps them running.

Each child is a full `Worker` with its own name (host-pid-random) in its own process group,
so a terminal's Ctrl-C reaches only the parent, which passes signals on: the first
SIGTERM/SIGINT/SIGQUIT asks every child to stop gracefully, a second makes them (and the
parent) exit at once. Children that exit on their own (`--max-jobs`, `--max-memory`) are
replaced; in burst mode they are not. A child notices a dead parent and stops gracefully.
Django's database connections are closed before forking so no child shares a socket.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from types import FrameType

from django.db import connections

from .shutdown import FORCED_EXIT, GRACEFUL

logger = logging.getLogger("django_qless.worker")

#: Children that die faster than this after starting are restarted with a delay.
MIN_UPTIME = 1.0
RESTART_DELAY = 1.0


class Supervisor:
    """Forks and watches `count` worker processes."""

    def __init__(self, count: int, run_child: Callable[[int], int], *, restart: bool = True
                 ) -> None:
        self.count = count
        self.run_child = run_child
        self.restart = restart
        self.children: dict[int, tuple[int, float]] = {}  # pid -> (slot, started)
        self.signals = 0
        self.status = 0
        self._previous: dict[int, object] = {}

    def run(self) -> int:
        """Start the children and wait for them; returns the worst exit status."""
        for signum in GRACEFUL:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        try:
            for slot in range(self.count):
                self._spawn(slot)
            while self.children:
                self._reap()
        finally:
            for number, previous in self._previous.items():
                signal.signal(number, previous)  # type: ignore[arg-type]
        return self.status

    def _spawn(self, slot: int) -> None:
        """Fork one worker process."""
        connections.close_all()
        # Signals stay blocked in the child until its worker has installed its handlers;
        # one sent meanwhile is delivered then, instead of killing a half-started process.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, GRACEFUL)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which never returns here
                self._child(slot)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        self.children[pid] = (slot, time.monotonic())
        logger.info("qless supervisor: started worker process %s (slot %s)", pid, slot)

    def _child(self, slot: int) -> None:
        """In the child: own process group, default signals, run a worker, exit."""
        code = 1
        try:
            os.setpgid(0, 0)
            for signum in GRACEFUL:
                signal.signal(signum, signal.SIG_DFL)
            code = self.run_child(slot)
        except BaseException:
            logger.exception("qless supervisor: worker process %s crashed", os.getpid())
        finally:
            os._exit(code)

    def _reap(self) -> None:
        """Wait for a child to exit; replace it unless we are stopping."""
        try:
            pid, status = os.wait()
        except ChildProcessError:
            self.children.clear()
            return
        if pid not in self.children:
            return
        slot, started = self.children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        self.status = max(self.status, abs(code))
        logger.info("qless supervisor: worker process %s exited with %s", pid, code)
        if self.signals or not self.restart:
            return
        if code != 0 and time.monotonic() - started < MIN_UPTIME:
            # Dying at start-up is a configuration problem: restarting will not fix it.
            logger.error("qless supervisor: worker process failed at start-up; stopping")
            self._on_signal(signal.SIGTERM, None)
            return
        if code != 0:
            time.sleep(RESTART_DELAY)
        if not self.signals:
            self._spawn(slot)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Pass the signal on to every child; after a second one, leave at once."""
        self.signals += 1
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGTERM if signum != signal.SIGINT else signal.SIGINT)
            except ProcessLookupError:
                pass
        if self.signals > 1:
            os.write(2, b"qless supervisor: second signal, exiting now\n")
            os._exit(FORCED_EXIT)
