"""`--processes N`: a parent that forks N serial workers and keeps them running.

Each child is a full `Worker` with its own name (host-pid-random) in its own process group,
so a terminal's Ctrl-C reaches only the parent, which passes signals on: the first
SIGTERM/SIGINT/SIGQUIT asks every child to stop gracefully, a second makes them (and the
parent) exit at once. Children that exit on their own (`--max-jobs`, `--max-memory`, or a
job that killed its process) are replaced; in burst mode they are not. A child whose worker
cannot start stops the whole group. A child notices a dead parent and stops gracefully.
Django's database connections are closed before forking so no child shares a socket.

The signal handlers only count signals; the loop (which polls its children every `TICK`)
passes each one on exactly once to every child, including a child forked just after it.
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

#: How often the parent looks at its children and at pending signals.
TICK = 0.05
#: Exit status of a child whose worker could not start (EX_CONFIG): restarting will not
#: help, so the supervisor stops. Any other exit (a job killing its process included) is
#: followed by a replacement.
STARTUP_FAILED = 78
#: Delay before replacing a child that crashed (exited non-zero).
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
        self._signum = signal.SIGTERM
        self._told: dict[int, int] = {}  # pid -> signals passed on to it
        self._restarts: list[tuple[float, int]] = []  # (when, slot)
        self._previous: dict[int, object] = {}

    def run(self) -> int:
        """Start the children and watch them; returns the worst exit status."""
        for signum in GRACEFUL:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        try:
            for slot in range(self.count):
                self._spawn(slot)
            while self.children or self._restarts:
                self._forward()
                if self.signals > 1:
                    os.write(2, b"qless supervisor: second signal, exiting now\n")
                    return FORCED_EXIT
                self._reap()
                self._restart_due()
                time.sleep(TICK)
        finally:
            for number, previous in self._previous.items():
                signal.signal(number, previous)  # type: ignore[arg-type]
        return self.status

    def _spawn(self, slot: int) -> None:
        """Fork one worker process."""
        if self.signals:
            return
        connections.close_all()
        # Signals stay blocked in the child until its worker has installed its handlers;
        # one sent meanwhile is delivered then, instead of killing a half-started process.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, GRACEFUL)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which never returns here
                self._child(slot)
            self.children[pid] = (slot, time.monotonic())
            self._told[pid] = 0
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        logger.info("qless supervisor: started worker process %s (slot %s)", pid, slot)

    def _child(self, slot: int) -> None:
        """In the child: own process group, default signals, run a worker, exit.

        `run_child` handles everything that happens while jobs run; an exception that
        escapes it means the worker could not start (or stop) cleanly.
        """
        code = STARTUP_FAILED
        try:
            os.setpgid(0, 0)
            for signum in GRACEFUL:
                signal.signal(signum, signal.SIG_DFL)
            code = self.run_child(slot)
        except BaseException:
            logger.exception("qless supervisor: worker process %s failed", os.getpid())
        finally:
            os._exit(code)

    def _forward(self) -> None:
        """Pass every signal received so far on to every child, once each."""
        for pid in list(self.children):
            while self._told[pid] < self.signals:
                self._told[pid] += 1
                try:
                    os.kill(pid, self._signum)
                except ProcessLookupError:
                    break

    def _reap(self) -> None:
        """Collect exited children; schedule replacements unless stopping."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            if pid in self.children:
                self._exited(pid, os.waitstatus_to_exitcode(status))

    def _exited(self, pid: int, code: int) -> None:
        """Record a child's exit and decide whether to replace it."""
        slot, _started = self.children.pop(pid)
        self._told.pop(pid, None)
        self.status = max(self.status, abs(code))
        logger.info("qless supervisor: worker process %s exited with %s", pid, code)
        if code == STARTUP_FAILED:
            logger.error("qless supervisor: worker process failed at start-up; stopping")
            self.signals = max(self.signals, 1)
            return
        # In burst mode a child that finished (status 0) is not replaced; one that died is,
        # since the queues were not known to be empty.
        if self.signals or (code == 0 and not self.restart):
            return
        self._restarts.append((time.monotonic() + (RESTART_DELAY if code else 0.0), slot))

    def _restart_due(self) -> None:
        """Fork the replacements whose time has come (none once stopping)."""
        if self.signals:
            self._restarts.clear()
            return
        now = time.monotonic()
        due = [slot for when, slot in self._restarts if when <= now]
        self._restarts = [(when, slot) for when, slot in self._restarts if when > now]
        for slot in due:
            self._spawn(slot)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Count the signal; the loop passes it on."""
        self.signals += 1
        self._signum = signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM
