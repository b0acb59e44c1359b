"""`--processes N`: a parent that forks N serial workers and keeps them running.

Each child is a full `Worker` with its own name (host-pid-random) in its own process group,
so a terminal's Ctrl-C reaches only the parent. The first SIGTERM/SIGINT/SIGQUIT the parent
receives (or a SIGUSR2) asks every child to stop gracefully with SIGUSR2, which a worker
never counts as a second signal: when a stop reaches the parent and its children at once
(systemd's default `KillMode=control-group`, `pkill`), each child still sees one counted
signal and finishes its job. A second SIGTERM/SIGINT/SIGQUIT to the parent SIGKILLs every
child (their jobs come back when their leases expire) and the parent exits at once.

Children that exit on their own (`--max-jobs`, `--max-memory`, or a job that killed its
process) are replaced; in burst mode those that finished are not. A child whose worker
cannot start stops the whole group. A child notices a dead parent and stops gracefully.
Django's database connections are closed before forking so no child shares a socket.

A child that dies abnormally (a signal, or a non-zero status other than a stop the
worker chose) is logged at ERROR with the jid it was running, read from a page the two
share (`current.Board`). `faulthandler` is on in the parent and every child.

The signal handlers only count signals; the loop (which polls its children every `TICK`)
passes the stop on exactly once to every child, including a child forked just after it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from types import FrameType

from django.db import connections

from . import current
from .crashes import enable_faulthandler
from .log_fields import jid_fields
from .shutdown import FORCED_EXIT, GRACEFUL, STOP_SIGNALS, SUPERVISOR_STOP

logger = logging.getLogger("django_qless.worker")

#: How often the parent looks at its children and at pending signals.
TICK = 0.05
#: Exit status of a child whose worker could not start (EX_CONFIG): restarting will not
#: help, so the supervisor stops. Any other exit (a job killing its process included) is
#: followed by a replacement.
STARTUP_FAILED = 78
#: Delay before replacing a child that crashed (exited non-zero).
RESTART_DELAY = 1.0
#: Longest wait for SIGKILLed children to be reaped after a second signal.
KILL_WAIT = 2.0


class Supervisor:
    """Forks and watches `count` worker processes."""

    def __init__(self, count: int, run_child: Callable[[int], int], *, restart: bool = True
                 ) -> None:
        self.count = count
        self.run_child = run_child
        self.restart = restart
        self.children: dict[int, tuple[int, float]] = {}  # pid -> (slot, started)
        #: Stop signals counted (SIGTERM/SIGINT/SIGQUIT); a second one forces the exit.
        self.signals = 0
        #: Set by the first stop of any kind: nothing more is forked.
        self.stopping = False
        self.status = 0
        self._signame = ""
        self._announced = False
        self._told: set[int] = set()  # children already sent the graceful stop
        self._restarts: list[tuple[float, int]] = []  # (when, slot)
        self._previous: dict[int, object] = {}
        self._boards: dict[int, current.Board] = {}  # pid -> the jid it is running

    def run(self) -> int:
        """Start the children and watch them; returns the worst exit status."""
        enable_faulthandler()
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        try:
            for slot in range(self.count):
                self._spawn(slot)
            while self.children or self._restarts:
                if self.signals > 1:
                    self._kill_all()
                    return FORCED_EXIT
                self._forward()
                self._reap()
                self._restart_due()
                time.sleep(TICK)
        finally:
            for number, previous in self._previous.items():
                signal.signal(number, previous)  # type: ignore[arg-type]
        return self.status

    def _spawn(self, slot: int) -> None:
        """Fork one worker process."""
        if self.stopping:
            return
        connections.close_all()
        board = current.Board()
        # Signals stay blocked in the child until its worker has installed its handlers;
        # one sent meanwhile is delivered then, instead of killing a half-started process.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which never returns here
                current.attach(board)
                self._child(slot)
            self.children[pid] = (slot, time.monotonic())
            self._boards[pid] = board
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
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            code = self.run_child(slot)
        except BaseException:
            logger.exception("qless supervisor: worker process %s failed", os.getpid())
        finally:
            os._exit(code)

    def _forward(self) -> None:
        """Once stopping, send every child the graceful stop (once each)."""
        if not self.stopping:
            return
        if not self._announced and self._signame:
            self._announced = True
            logger.info("qless supervisor: %s received; asking the worker processes to "
                        "stop gracefully", self._signame)
        for pid in self.children.keys() - self._told:
            self._told.add(pid)
            try:
                os.kill(pid, SUPERVISOR_STOP)
            except ProcessLookupError:
                pass

    def _kill_all(self) -> None:
        """Second signal: SIGKILL every child, reap them briefly, say so on stderr."""
        line = (f"qless supervisor: second signal ({self._signame}), killing "
                f"{len(self.children)} worker process(es) now\n")
        os.write(2, line.encode())
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + KILL_WAIT
        while self.children and time.monotonic() < deadline:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(TICK / 5)
            self.children.pop(pid, None)

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
        self._told.discard(pid)
        self.status = max(self.status, abs(code))
        board = self._boards.pop(pid, None)
        jid = board.read() if board is not None else None
        if board is not None:
            board.close()
        if code == 0:
            logger.info("qless supervisor: worker process %s exited with 0", pid)
        else:
            logger.error("qless supervisor: worker process %s %s while running job %s", pid,
                         exit_description(code), jid or "(none)", extra=jid_fields(jid))
        if code == STARTUP_FAILED:
            logger.error("qless supervisor: worker process failed at start-up; stopping")
            self.stopping = True
            return
        # In burst mode a child that finished (status 0) is not replaced; one that died is,
        # since the queues were not known to be empty.
        if self.stopping or (code == 0 and not self.restart):
            return
        self._restarts.append((time.monotonic() + (RESTART_DELAY if code else 0.0), slot))

    def _restart_due(self) -> None:
        """Fork the replacements whose time has come (none once stopping)."""
        if self.stopping:
            self._restarts.clear()
            return
        now = time.monotonic()
        due = [slot for when, slot in self._restarts if when <= now]
        self._restarts = [(when, slot) for when, slot in self._restarts if when > now]
        for slot in due:
            self._spawn(slot)

    def receive(self, signum: int) -> None:
        """A stop signal received before `run` (it then forks nothing)."""
        self._on_signal(signum, None)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Note the stop (SIGUSR2 is never counted); the loop passes it on."""
        self.stopping = True
        self._signame = signal.Signals(signum).name
        if signum in GRACEFUL:
            self.signals += 1


def exit_description(code: int) -> str:
    """A child's death in words: the signal that killed it, or its exit status."""
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
