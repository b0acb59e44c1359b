"""A supervisor of `manage.py qless_worker` subprocesses, like systemd with Restart=always.

Each worker runs in its own session (so its own process group); a watcher thread restarts
any worker that exits within `RESTART_WITHIN` seconds, unless the fleet is stopping. Every
signal sent, every death and every restart is logged with its time.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The watcher looks this often; a dead worker is restarted well within 0.5 s.
WATCH_EVERY = 0.05
RESTART_WITHIN = 0.5
#: Worker options of the compressed-time setup (queue lease 3 s, grace 1 s).
FAST = ("--poll-interval", "0.2", "--heartbeat-interval", "1")


@dataclass
class Member:
    """One worker process of the fleet."""

    slot: int
    proc: subprocess.Popen[bytes]
    started: float
    log: Path


@dataclass
class Fleet:
    """N qless_worker subprocesses on one Redis URL, restarted when they die."""

    url: str
    workdir: Path
    count: int = 1
    args: tuple[str, ...] = ("q",)
    env: dict[str, str] = field(default_factory=dict)
    restart: bool = True
    #: Seconds the workers' clocks are moved by (see tests/faults/skewed.py); None: not moved.
    clock_offset: float | None = None
    #: Arguments run instead of `-m django qless_worker` (a module wrapping the command).
    launcher: tuple[str, ...] = ()
    members: dict[int, Member] = field(default_factory=dict)
    #: (monotonic time, what, pid, detail): signals sent, deaths, restarts.
    events: list[tuple[float, str, int, str]] = field(default_factory=list)
    #: pid -> wall-clock time of its death (of the SIGKILL when we sent one).
    deaths: dict[int, float] = field(default_factory=dict)
    exit_codes: dict[int, int] = field(default_factory=dict)
    restarts: int = 0
    #: Seconds from each death (or the SIGKILL that caused it) to the replacement's start.
    restart_latencies: list[float] = field(default_factory=list)
    _stopping: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    @property
    def ledger_dir(self) -> Path:
        """Where the workers' jobs write the ledger."""
        return self.workdir / "ledger"

    def start(self) -> Fleet:
        """Start every worker and the watcher."""
        self.ledger_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        for slot in range(self.count):
            self._spawn(slot)
        self._thread = threading.Thread(target=self._watch, name="fleet-watch", daemon=True)
        self._thread.start()
        return self

    def _spawn(self, slot: int) -> Member:
        """Start the worker of one slot."""
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.faults.settings",
            "QLESS_FAULTS_URL": self.url,
            "QLESS_FAULTS_LEDGER": str(self.ledger_dir),
            "PYTHONPATH": str(ROOT),
            **self.env,
        }
        log = self.workdir / "logs" / f"slot{slot}-{len(self.events)}.log"
        command = ["-m", "django", "qless_worker"]
        if self.clock_offset is not None:
            command = ["-m", "tests.faults.skewed", str(self.clock_offset)]
        if self.launcher:
            command = list(self.launcher)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, *command, *self.args],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        member = Member(slot, proc, time.monotonic(), log)
        self.members[slot] = member
        self.events.append((member.started, "start", proc.pid, f"slot {slot}"))
        return member

    def _watch(self) -> None:
        """Restart dead workers until the fleet stops."""
        while not self._stopping:
            with self._lock:
                for slot, member in list(self.members.items()):
                    code = member.proc.poll()
                    if code is None or member.proc.pid in self.exit_codes:
                        continue
                    self._died(member, code)
                    if self.restart and not self._stopping:
                        self._spawn(slot)
                        self.restarts += 1
                        died = self.deaths[member.proc.pid]
                        self.restart_latencies.append(time.time() - died)
            time.sleep(WATCH_EVERY)

    def _died(self, member: Member, code: int) -> None:
        """Log a death (its time is the kill's when we sent one)."""
        pid = member.proc.pid
        self.exit_codes[pid] = code
        self.deaths.setdefault(pid, time.time())
        self.events.append((time.monotonic(), "exit", pid, str(code)))

    # Signals.

    def pids(self) -> list[int]:
        """Pids of the current members."""
        return [member.proc.pid for member in self.members.values()]

    def live_pids(self) -> list[int]:
        """Pids of members still running."""
        return [m.proc.pid for m in self.members.values() if m.proc.poll() is None]

    def send(self, pid: int, signum: int) -> float:
        """Send a signal to one worker's process group; returns when (monotonic)."""
        with self._lock:
            sent = time.monotonic()
            os.killpg(pid, signum)
            self.events.append((sent, signal.Signals(signum).name, pid, ""))
            if signum == signal.SIGKILL:
                self.deaths[pid] = time.time()
        return sent

    def kill_random(self, rng: random.Random, signum: int = signal.SIGKILL) -> int:
        """Signal a random live worker; returns its pid."""
        pid = rng.choice(self.live_pids())
        self.send(pid, signum)
        return pid

    def wait_dead(self, pid: int, timeout: float = 5.0) -> None:
        """Block until the watcher saw the worker `pid` exit (it may be restarted already)."""
        deadline = time.monotonic() + timeout
        while pid not in self.exit_codes:
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {pid} still alive {timeout}s after its kill")
            time.sleep(WATCH_EVERY / 2)

    def member(self, pid: int) -> Member:
        """The member with this pid."""
        return next(m for m in self.members.values() if m.proc.pid == pid)

    def kills(self) -> int:
        """How many SIGKILLs were sent."""
        return sum(1 for _, what, _, _ in self.events if what == "SIGKILL")

    def wait_exit(self, pid: int, timeout: float) -> int:
        """Wait for one worker to exit (without restarting it: call `hold()` first)."""
        member = self.member(pid)
        try:
            return member.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker {pid} still running after {timeout}s:\n"
                                 f"{self.output(pid)}") from None

    def hold(self) -> None:
        """Stop restarting workers from now on."""
        self.restart = False

    def output(self, pid: int | None = None) -> str:
        """Logs of one worker (by pid) or of every worker started so far."""
        logs = sorted((self.workdir / "logs").glob("*.log"))
        if pid is not None:
            logs = [self.member(pid).log]
        return "\n".join(f"== {log.name}\n{log.read_text(errors='replace')}" for log in logs)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every worker, wait, SIGKILL what is left; stop the watcher."""
        self._stopping = True
        if self._thread is not None:
            self._thread.join(2)
        live = [m for m in self.members.values() if m.proc.poll() is None]
        for member in live:
            _killpg(member.proc.pid, signal.SIGCONT)
            _killpg(member.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for member in live:
            try:
                member.proc.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                _killpg(member.proc.pid, signal.SIGKILL)
                member.proc.wait(5)
        lines = [f"{when:.3f} {what} {pid} {detail}\n" for when, what, pid, detail in self.events]
        (self.workdir / "signals.log").write_text("".join(lines))


def _killpg(pid: int, signum: int) -> None:
    """Signal a process group that may be gone already."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
