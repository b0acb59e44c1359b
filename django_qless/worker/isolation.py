"""`--isolation process`: each job runs in a forked child process the worker can SIGKILL.

The worker's job thread forks a child with the job in memory (`child.run_child`) and waits
for its JSON report on a pipe, while its monitor thread keeps renewing the lease as for an
in-process job. With `--concurrency N` each slot thread does the same for its own job, so
up to N children run at once, each watched by its slot alone. The child enforces the soft
time limit itself (the job sees `TimeLimitExceeded` as usual); the parent enforces what a
job cannot escape:

- the hard time limit: the child is SIGKILLed and the job failed into
  `<queue>-TimeLimitExceeded`, with the stack the child was in (dumped by `faulthandler`
  on SIGUSR1 just before the kill);
- the memory cap: the child's resident memory is read every `WATCH_EVERY` seconds, and
  past `job_memory_mb` it is SIGKILLed and the job failed into `<queue>-MemoryLimitExceeded`;
- a child that dies without reporting (signal, `os._exit`, `abort`) fails the job into
  `<queue>-ChildProcessDied` as soon as `waitpid` sees it, with the signal or exit status
  and the child's `faulthandler` output (a temporary file per child, read back);
- a lost lock, a cancellation, a fence or the shutdown deadline interrupts the waiting
  parent as it would interrupt the job, and the parent SIGKILLs the child before going
  on. The interruption is not raised into the waiting thread but read by it between two
  waits (`Interrupter.arm(polled=True)`): raised, it could land between the fork and the
  thread's bookkeeping of the child, which would then run on unwatched. A time limit
  from the monitor (the hard limit, which is the deadline it watches for an isolated job)
  is the hard limit here.

Each child waits for its own pid (`waitpid(pid)`, never any child) and has its own pipe
and `faulthandler` file. Forks are taken one at a time (`_FORKING`): another thread's
child, forked while a pipe's write end is still open in the parent, would keep it open
and hide the end of that pipe's child until its own end. What a child inherits from the
other threads of the worker (their locks) is reset in the child (`forked`).

`@qless_job` functions run isolated; `async def` jobs and Django Tasks tasks stay in the
worker process (they share its event loop and its task bookkeeping).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import json
import os
import select
import signal
import tempfile
import threading
import time
from typing import Any

from ..core import Job
from ..exceptions import QlessConfigurationError
from ..results import NOTHING
from .child import REPORTED, run_child
from .child_failures import ChildProcessDied, MemoryLimitExceeded, from_report, stand_in
from .interrupt import Interrupter, JobInterrupted, TimeLimitExceeded
from .options import WorkerOptions
from .rss import PAGE
from .targets import JobTarget, Target

#: Without HARD_TIME_LIMIT, the hard limit is the soft one plus the larger of these.
HARD_MARGIN = 1.0
HARD_SHARE = 0.1
#: Longest the parent waits on the pipe before looking at the deadline and memory again.
WATCH_EVERY = 0.05
#: How long the child gets to dump its stack (SIGUSR1) before the hard-limit SIGKILL.
DUMP_GRACE = 0.05
#: At most this much of the child's faulthandler output goes into a failure message.
MAX_DUMP = 8 * 1024
_TIME_LIMIT_PATH = f"{TimeLimitExceeded.__module__}.{TimeLimitExceeded.__qualname__}"
#: Held from a child's pipe to the close of its write end in the parent, around the fork.
_FORKING = threading.Lock()


def check_options(options: WorkerOptions) -> None:
    """Refuse limits that only isolation enforces without it, and a hard limit below the soft."""
    if options.isolation != "process" and (options.hard_time_limit or options.job_memory_mb):
        raise QlessConfigurationError(
            "HARD_TIME_LIMIT (--hard-time-limit) and JOB_MEMORY_MB (--job-memory) need "
            "ISOLATION 'process' (--isolation process)")
    soft, hard = options.time_limit, options.hard_time_limit
    if soft is not None and hard is not None and hard < soft:
        raise QlessConfigurationError(
            f"HARD_TIME_LIMIT ({hard}s) is below TIME_LIMIT ({soft}s)")


def hard_limit(soft: float | None, configured: float | None) -> float | None:
    """The hard limit of a job: the configured one, but never within the margin of its soft."""
    derived = soft + max(HARD_MARGIN, soft * HARD_SHARE) if soft else None
    if configured is None or derived is None:
        return configured or derived
    return max(configured, derived)


class Isolation:
    """Decides which jobs run in a child and runs them there."""

    def __init__(self, options: WorkerOptions) -> None:
        check_options(options)
        self.enabled = options.isolation == "process"
        self.hard_time_limit = options.hard_time_limit
        self.memory_mb = options.job_memory_mb

    def applies(self, target: Target) -> bool:
        """True for a synchronous `@qless_job` when isolation is on."""
        return (self.enabled and isinstance(target, JobTarget)
                and not inspect.iscoroutinefunction(target.definition.func))

    def hard_limit(self, soft: float | None) -> float | None:
        """The hard time limit of a job whose soft limit is `soft`."""
        return hard_limit(soft, self.hard_time_limit)

    def call(self, target: Target, job: Job, soft: float | None, interrupter: Interrupter
             ) -> Any:
        """Run the job in a child; its kept value (`NOTHING`: none), or raise its failure.

        `interrupter` is armed `polled` by the caller: its `pending` stops the child.
        """
        run = ChildRun(target, job, soft, self.hard_limit(soft), self.memory_mb, interrupter)
        return run.wait()


class ChildRun:
    """One forked child running one job, watched by the worker's job thread."""

    def __init__(self, target: Target, job: Job, soft: float | None, hard: float | None,
                 memory_mb: int | None, interrupter: Interrupter) -> None:
        self.soft, self.hard, self.memory_mb = soft, hard, memory_mb
        self.interrupter = interrupter
        self.faults = tempfile.TemporaryFile()  # noqa: SIM115 - closed in wait()
        self.started = time.monotonic()
        parent = os.getpid()
        with _FORKING:
            read_fd, write_fd = os.pipe()
            # The child's garbage collector leaves the objects it inherited alone: scanning
            # them would copy every page they are on (copy-on-write), ~60 ms per job.
            gc.freeze()
            try:
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child never returns from run_child
                    os.close(read_fd)
                    run_child(target, job, soft, write_fd, self.faults.fileno(), parent)
            except BaseException:
                os.close(read_fd)
                self.faults.close()
                raise
            finally:
                gc.unfreeze()
                os.close(write_fd)
        self.pid, self.read_fd = pid, read_fd
        self.deadline = self.started + hard if hard else None
        self.status: int | None = None

    def wait(self) -> Any:
        """Wait for the report (or the child's end); kill the child on any interruption."""
        try:
            report = self._read_report()
            self._reap()
            return self._outcome(report)
        except BaseException:
            # A lost lock, cancellation or shutdown raised here: the job must stop now.
            self._kill()
            raise
        finally:
            os.close(self.read_fd)
            self.faults.close()

    def _read_report(self) -> bytes:
        """Everything the child writes, until it closes the pipe (it exited or died)."""
        chunks: list[bytes] = []
        while True:
            ready, _, _ = select.select([self.read_fd], [], [], WATCH_EVERY)
            if ready:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
            self._check_limits()

    def _check_limits(self) -> None:
        """SIGKILL the child and raise the job's failure past the hard limit or memory cap,
        or the interruption the job received."""
        interruption: type[JobInterrupted] | None = self.interrupter.pending
        timed_out = self.deadline is not None and time.monotonic() >= self.deadline
        if timed_out or interruption is TimeLimitExceeded:
            stack = self._dump_stack()
            self._kill()
            hard = self.hard if self.hard is not None else time.monotonic() - self.started
            raise stand_in(_TIME_LIMIT_PATH)(
                f"TimeLimitExceeded: hard time limit of {hard:g}s exceeded (soft limit "
                f"{self.soft or 0:g}s); the job's process {self.pid} was killed with "
                f"SIGKILL{stack}")
        if interruption is not None:
            raise interruption()  # wait() kills the child
        if self.memory_mb is not None:
            used = child_rss_mb(self.pid)
            if used > self.memory_mb:
                self._kill()
                raise MemoryLimitExceeded(
                    f"MemoryLimitExceeded: the job's process {self.pid} used {used:.0f} MiB, "
                    f"above JOB_MEMORY_MB {self.memory_mb}; it was killed with SIGKILL after "
                    f"{time.monotonic() - self.started:.2f}s")

    def _outcome(self, report: bytes) -> Any:
        """The kept value of a returned job; else raise its failure."""
        status = self.status
        if status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == REPORTED:
            try:
                decoded: dict[str, Any] = json.loads(report)
            except ValueError:
                decoded = {}
            if decoded.get("kind") == "returned":
                return decoded["value"] if decoded.get("kept") else NOTHING
            if decoded:
                raise from_report(decoded)
        raise ChildProcessDied(
            f"ChildProcessDied: the job's process {self.pid} {describe(status)} after "
            f"{time.monotonic() - self.started:.2f}s without reporting how the job ended"
            f"{self._faulthandler_output()}")

    def _dump_stack(self) -> str:
        """Ask the child for its stack (faulthandler on SIGUSR1); the text, or ''."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGUSR1)
            # Not an assertion: the dump is best effort, the kill follows regardless.
            time.sleep(DUMP_GRACE)
        return self._faulthandler_output()

    def _faulthandler_output(self) -> str:
        """The child's faulthandler output so far, as a message section ('' if none)."""
        text = os.pread(self.faults.fileno(), MAX_DUMP, 0).decode(errors="replace").strip()
        return f"\n\nfaulthandler output of the job's process:\n{text}" if text else ""

    def _kill(self) -> None:
        """SIGKILL the child (if it is still there) and reap it."""
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap()

    def _reap(self) -> None:
        """Wait for the child's exit status (once)."""
        if self.status is None:
            _pid, self.status = os.waitpid(self.pid, 0)


def describe(status: int | None) -> str:
    """How a child ended, from its wait status: signal name or exit status."""
    if status is None:
        return "ended in an unknown way"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by signal {name} ({number})"
    return f"exited with status {os.WEXITSTATUS(status)}"


def child_rss_mb(pid: int) -> float:
    """Resident memory of a child process in MiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE / 1_048_576
    except (OSError, IndexError, ValueError):
        return 0.0
