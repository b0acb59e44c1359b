"""Stopping a running job function from outside: time limit, lost lock or lease, shutdown deadline.

In the main thread (the normal case) the interruption is a SIGALRM: `setitimer` for the
time limit, `pthread_kill` from the monitor thread for the other reasons. A signal also
breaks blocking calls such as `time.sleep` or a socket read. The handler raises only while
the job function is running ("armed"), so the worker's own Redis calls are never cut.

Outside the main thread (a `Worker` embedded in a thread) signals cannot be used;
the exception is then set asynchronously (`PyThreadState_SetAsyncExc`) and takes effect at
the next Python bytecode, so it does not break a blocking C call.

An `async def` job is different: its coroutine runs as a task on the worker's event loop
(`aio.JobLoop`), which registers a canceller (`cancel_with`) while it runs. An
interruption then cancels that task (thread-safely, from the monitor thread or the
SIGALRM handler) rather than raising into the loop's own code; the loop awaits the
cancellation and raises the `pending` interruption itself.

A thread that waits for an isolated job's child (`isolation`) arms `polled`: nothing is
raised into it (an exception landing between the fork and its bookkeeping of the child
would leave the child unwatched); it reads `pending` between two waits and kills the child.

Limits, in both modes: code that stays inside one C call (a long regex, a C extension that
does not check for signals) is only stopped when that call returns; a job that catches
`BaseException` can swallow the interruption (the worker still discards its result when
the lock was lost). Jobs that use SIGALRM themselves conflict with the time limit.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any


class JobInterrupted(BaseException):  # noqa: N818 - control flow, like KeyboardInterrupt
    """Raised inside a running job to stop it; a BaseException so `except Exception` misses it."""

    reason = "interrupted"


class TimeLimitExceeded(JobInterrupted):  # noqa: N818 - the failure group is named after it
    """The job ran longer than its time limit."""

    reason = "time limit exceeded"


class LockLost(JobInterrupted):  # noqa: N818 - mirrors qless's `lock_lost` event
    """The job's lock went to someone else (timeout, move, cancel, lease expiry)."""

    reason = "lock lost"


class LeaseExpired(LockLost):  # noqa: N818 - a kind of lock loss
    """The job's lease could not be renewed in time: the worker fenced it (see `fence`)."""

    reason = "lease not renewed"


class ShutdownTimeout(JobInterrupted):  # noqa: N818 - control flow
    """The worker is stopping and the job did not finish within the shutdown timeout."""

    reason = "shutdown timeout"


class Interrupter:
    """Arms around a job call and raises a `JobInterrupted` subclass into it on request."""

    def __init__(self, use_signals: bool) -> None:
        self.thread_id = threading.get_ident()
        self.use_signals = use_signals
        self.armed = False
        self.pending: type[JobInterrupted] | None = None
        self._lock = threading.Lock()
        self._async_sent = False
        self._timer = False
        #: Armed for a thread that reads `pending` itself: nothing is raised into it.
        self._polled = False
        self._installed = False
        self._previous: Any = None
        self._saved_timer = (0.0, 0.0)
        self._cancel: Callable[[], object] | None = None

    def install(self) -> None:
        """Take over SIGALRM (main-thread mode only; without it, asynchronous exceptions)."""
        in_main = threading.current_thread() is threading.main_thread()
        if self.use_signals and in_main and not self._installed:
            self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
            self._saved_timer = (signal.getitimer(signal.ITIMER_REAL)[0], time.monotonic())
            self._installed = True

    def uninstall(self) -> None:
        """Give SIGALRM back, with whatever timer its previous owner had left."""
        if self._installed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
            self._installed = False
            seconds, since = self._saved_timer
            if seconds > 0:
                left = seconds - (time.monotonic() - since)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))

    @property
    def signals(self) -> bool:
        """True when interruptions are SIGALRMs (installed, in the main thread)."""
        return self._installed

    @property
    def precise_time_limit(self) -> bool:
        """True when the time limit is enforced by a timer (else the monitor thread does it)."""
        return self._installed

    def arm(self, time_limit: float | None, *, polled: bool = False) -> None:
        """Called by the job thread right before the job function runs; `polled`: the
        thread reads `pending` itself (nothing is raised into it, no timer is set)."""
        self.pending = None
        self.thread_id = threading.get_ident()
        self._polled = polled
        if self._installed and time_limit and not polled:
            signal.setitimer(signal.ITIMER_REAL, time_limit)
            self._timer = True
        self.armed = True

    def disarm(self) -> None:
        """Called by the job thread as soon as the job function returns or raises."""
        with self._lock:
            self.armed = False
            if self._async_sent:
                # Withdraw an exception that was set but not yet raised, so it cannot
                # surface later inside the worker's own code.
                _set_async_exc(self.thread_id, None)
                self._async_sent = False
        if self._timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._timer = False

    def cancel_with(self, cancel: Callable[[], object] | None) -> None:
        """While an async job runs: interrupt by calling `cancel` (None: raise again).

        An interruption that came before the canceller was set cancels at once.
        """
        with self._lock:
            self._cancel = cancel
            if cancel is not None and self.pending is not None and self.armed:
                cancel()

    def interrupt(self, exc_class: type[JobInterrupted]) -> bool:
        """Called from another thread: stop the running job with `exc_class`."""
        with self._lock:
            if not self.armed:
                return False
            self.pending = exc_class
            if self._cancel is not None:
                self._cancel()
            elif self._polled:
                pass  # the job thread reads `pending` at its next look
            elif self._installed:
                signal.pthread_kill(self.thread_id, signal.SIGALRM)
            else:
                _set_async_exc(self.thread_id, exc_class)
                self._async_sent = True
        return True

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        """SIGALRM: raise into the job if one is running (one shot)."""
        if not self.armed or self._polled:
            return
        if self._cancel is not None:
            # An async job: cancel its task (never raise inside the event loop's code).
            self.pending = self.pending or TimeLimitExceeded
            self._cancel()
            return
        self.armed = False
        raise (self.pending or TimeLimitExceeded)()


def _set_async_exc(thread_id: int, exc_class: type[BaseException] | None) -> None:
    """Schedule (or with None, withdraw) an exception in another Python thread."""
    target = ctypes.py_object(exc_class) if exc_class is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)
