"""OS signals: the first SIGTERM/SIGINT/SIGQUIT stops the worker gracefully, a second exits.

Handlers only set flags (the loop logs); the one exception is the second signal, which
writes a line straight to stderr and leaves with `os._exit`, because waiting for anything
(even logging locks) is what the operator is asking us not to do. The job's lock is then
left to expire and qless hands the job to another worker. SIGUSR1 dumps every thread's
stack to stderr (faulthandler), for hung jobs.

SIGUSR2 is the stop a supervisor passes on to its workers: graceful, and never counted as
a second signal. A stop sent to the whole process tree (systemd's default
`KillMode=control-group`, `pkill`) reaches a worker twice, once directly and once through
the supervisor; only the direct one counts, so the worker still stops gracefully.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from types import FrameType
from typing import Any

from .state import StopState

GRACEFUL = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
#: Graceful stop that is never counted towards a forced exit (sent by the supervisor).
SUPERVISOR_STOP = signal.SIGUSR2
#: Every signal that stops a worker.
STOP_SIGNALS = (*GRACEFUL, SUPERVISOR_STOP)
#: Exit status after a second signal.
FORCED_EXIT = 1


class SignalHandlers:
    """Installs and restores the worker's signal handlers (main thread only)."""

    def __init__(self, stop: StopState, worker_name: str) -> None:
        self.stop = stop
        self.worker_name = worker_name
        self._previous: dict[int, Any] = {}
        self.installed = False

    def install(self) -> bool:
        """Install the handlers; False (and nothing done) outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in GRACEFUL:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        self._previous[SUPERVISOR_STOP] = signal.signal(SUPERVISOR_STOP, self._on_supervisor)
        # A supervisor forks its workers with these blocked (see supervisor.py).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
        self.installed = True
        return True

    def restore(self) -> None:
        """Put the previous handlers back."""
        if not self.installed:
            return
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        if hasattr(signal, "SIGUSR1"):
            faulthandler.unregister(signal.SIGUSR1)
        self._previous.clear()
        self.installed = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """A stop signal: see `receive`."""
        self.receive(signum)

    def receive(self, signum: int) -> None:
        """First signal: graceful stop. Second: leave now, non-zero. SIGUSR2: graceful."""
        if signum == SUPERVISOR_STOP:
            self.stop.request("signal SIGUSR2")
            return
        self.stop.signals += 1
        if self.stop.signals == 1:
            self.stop.request(f"signal {signal.Signals(signum).name}")
            return
        line = (f"qless worker {self.worker_name}: second signal "
                f"({signal.Signals(signum).name}), exiting now\n")
        os.write(2, line.encode())
        os._exit(FORCED_EXIT)

    def _on_supervisor(self, signum: int, frame: FrameType | None) -> None:
        """The supervisor is stopping: graceful, whatever else was received."""
        self.stop.request("signal SIGUSR2")
