"""Stop signals that reach `qless_worker` before its worker has installed its own handlers.

Start-up takes a while (Django's set-up, every app's `qless_jobs` module, the checks
against Redis), and a SIGTERM meanwhile would kill the process with the default action. So
the worker command installs these handlers as soon as Django loads django_qless in a
process started as `manage.py qless_worker ...`: a signal received then is kept, and handed
to the worker (or supervisor, or reloading parent) once it exists, which then stops
before popping anything, with status 0. A second SIGTERM/SIGINT/SIGQUIT exits at once with
status 1, as it would later. A signal that arrives while Python and Django are still
loading, before that, ends the process as it would any program.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

# The worker's own (worker.shutdown), repeated: importing the worker package here would
# delay the install by the time it takes to load.
GRACEFUL = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
STOP_SIGNALS = (*GRACEFUL, signal.SIGUSR2)
FORCED_EXIT = 1

#: The management command these handlers are for.
COMMAND = "qless_worker"


class EarlySignals:
    """Keeps the stop signals received before a receiver takes them, then forwards them."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.installed = False
        self._receiver: Callable[[int], None] | None = None

    def install(self) -> None:
        """Catch the stop signals from now on (whatever was inherited, ignored included)."""
        if self.installed:
            return
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        self.installed = True

    def hand_over(self, receiver: Callable[[int], None]) -> None:
        """Pass the signals received so far, and every later one, to `receiver`."""
        if not self.installed:
            return
        self._receiver = receiver
        for signum in self.received:
            receiver(signum)

    @property
    def stop_requested(self) -> str | None:
        """The name of the first stop signal received, if any."""
        return signal.Signals(self.received[0]).name if self.received else None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """Keep the signal (or forward it); a second counted one exits at once."""
        self.received.append(signum)
        if self._receiver is not None:
            self._receiver(signum)
            return
        if sum(1 for number in self.received if number in GRACEFUL) > 1:
            name = signal.Signals(signum).name
            os.write(2, f"qless worker: second signal ({name}) during start-up, exiting "
                        "now\n".encode())
            os._exit(FORCED_EXIT)


#: The one set of early handlers of this process.
EARLY = EarlySignals()


def install_for_worker_command(argv: list[str] | None = None) -> bool:
    """Install `EARLY` if this process runs the worker command; True if it does.

    Django's own dispatch: the command is the first argument of manage.py, django-admin
    or python -m django.
    """
    argv = sys.argv if argv is None else argv
    if len(argv) > 1 and argv[1] == COMMAND:
        EARLY.install()
        return True
    return False
