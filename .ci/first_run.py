#!/usr/bin/env python
"""Run the README's run command as a newcomer would, then press Ctrl-C.

    python .ci/first_run.py "<the README's run command>"

The command runs through `bash -c` in its own process group, as a terminal's foreground
job, with the environment as it is (no QLESS_*/DJANGO_* override). Once it prints the
admin's address and credentials, this logs in with them and opens the admin's pages (the
Qless ones included) until they all show the demo, sends SIGINT to the process group, as
Ctrl-C would, and checks that the command exits 0 and that every process it started
(recorded from /proc while it ran: redis-server, the worker and its reloaded child,
runserver and its child) is gone. Exits 0 when all is well. Standard library only; Linux.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_project"))
from runlib.admin_check import check_admin  # noqa: E402 - found through the line above

#: Longest wait for the banner (the command installs the package first).
START_TIMEOUT = 600.0
#: Longest wait for the admin pages to show the demo (the worker runs its jobs meanwhile).
PAGES_TIMEOUT = 120.0
#: Longest wait for the command, then for every process it started, to end after Ctrl-C.
STOP_TIMEOUT = 60.0

ADMIN = re.compile(r"^\s*Admin\s+(http://\S+?)/admin/\s*$", re.MULTILINE)
LOGIN = re.compile(r"^\s*Login\s+(\S+) / (\S+)\s*$", re.MULTILINE)


def say(text: str) -> None:
    """A line of this script's own output."""
    print(f"first_run: {text}", flush=True)  # noqa: T201 - CI log


class Output:
    """The command's output, echoed as it comes and kept for parsing."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.text = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        for line in process.stdout or ():
            sys.stdout.write(f"    | {line}")
            sys.stdout.flush()
            with self._lock:
                self.text += line

    def read(self) -> str:
        """Everything printed so far."""
        with self._lock:
            return self.text


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every process (Linux /proc)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # After the name: state, ppid, ..., starttime (the 22nd field of stat).
        table[int(entry.name)] = (int(fields[1]), fields[19])
    return table


def describe(pid: int) -> str:
    """A process's command line, for messages."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


class Descendants:
    """Every process seen below `root` while the command runs: pid -> (start time, argv)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, tuple[str, str]] = {}

    def record(self) -> None:
        """Add the current descendants of the root."""
        table = process_table()
        below = {self.root}
        grew = True
        while grew:
            grew = False
            for pid, (parent, _started) in table.items():
                if parent in below and pid not in below:
                    below.add(pid)
                    grew = True
        for pid in below - {self.root}:
            if pid not in self.seen:
                self.seen[pid] = (table[pid][1], describe(pid))

    def alive(self) -> list[str]:
        """The recorded processes still running (same pid and start time, not a zombie)."""
        table = process_table()
        left = []
        for pid, (started, argv) in self.seen.items():
            if pid in table and table[pid][1] == started and not zombie(pid):
                left.append(f"{pid} {argv}")
        return left

    def named(self, word: str) -> list[str]:
        """The recorded command lines that contain `word`."""
        return [argv for _started, argv in self.seen.values() if word in argv]


def zombie(pid: int) -> bool:
    """True for an exited process not yet reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_for_banner(process: subprocess.Popen[str], output: Output,
                    procs: Descendants) -> tuple[str, str, str]:
    """The admin's base URL, user and password, once the command has printed them."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        procs.record()
        text = output.read()
        admin, login = ADMIN.search(text), LOGIN.search(text)
        if admin and login and "Press Ctrl-C" in text:
            return admin.group(1), login.group(1), login.group(2)
        if process.poll() is not None:
            raise RuntimeError(f"the command exited with {process.returncode} before serving")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no admin address printed within {START_TIMEOUT:.0f}s")
        time.sleep(0.5)


def open_pages(base: str, user: str, password: str, procs: Descendants) -> None:
    """Log in and open the admin's pages until every one shows the demo's data."""
    deadline = time.monotonic() + PAGES_TIMEOUT
    while True:
        procs.record()
        try:
            lines = check_admin(base, user, password)
        except (OSError, RuntimeError) as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the admin pages did not show the demo: {exc}") from exc
            time.sleep(2.0)
            continue
        for line in lines:
            say(line)
        return


def stopped(signum: int, frame: object) -> None:
    """This script is stopped (CI's timeout): leave through `main`'s clean-up."""
    raise SystemExit(f"first_run: stopped by {signal.Signals(signum).name}")


def main(argv: list[str]) -> int:
    """Run the command, check it, Ctrl-C it, check that nothing is left."""
    if len(argv) != 1:
        say("usage: first_run.py '<command>'")
        return 2
    command = argv[0]
    say(f"+ {command}")
    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGHUP, stopped)
    # Own session and process group: the group plays the terminal's foreground job.
    process = subprocess.Popen(  # noqa: S603 - the README's own command
        ["bash", "-c", command],  # noqa: S607 - bash from PATH, as a terminal finds it
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )
    try:
        return check(process)
    finally:
        # Whatever happened here (this script stopped or failed), nothing is left behind:
        # SIGTERM lets run.py stop what it started.
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def check(process: subprocess.Popen[str]) -> int:
    """Everything after the start: serve, pages, Ctrl-C, what is left; the exit status."""
    output = Output(process)
    procs = Descendants(process.pid)
    failures = []
    try:
        base, user, password = wait_for_banner(process, output, procs)
        say(f"serving at {base}; logging in as {user}")
        open_pages(base, user, password, procs)
        procs.record()
        # The worker and runserver each run in a reloaded child of their own.
        for word, least in (("redis-server", 1), ("qless_worker", 2), ("runserver", 2)):
            if len(procs.named(word)) < least:
                failures.append(f"fewer than {least} {word} processes were seen")
    except RuntimeError as exc:
        failures.append(str(exc))
    say("Ctrl-C (SIGINT to the command's process group)")
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        status = process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        failures.append(f"the command did not exit within {STOP_TIMEOUT:.0f}s of Ctrl-C")
        os.killpg(process.pid, signal.SIGKILL)
        status = process.wait()
    if status != 0:
        failures.append(f"the command exited with {status} after Ctrl-C")
    deadline = time.monotonic() + STOP_TIMEOUT
    while (left := procs.alive()) and time.monotonic() < deadline:
        time.sleep(0.5)
    say(f"{len(procs.seen)} processes were started; {len(left)} left running")
    if left:
        failures.append("still running after Ctrl-C: " + "; ".join(left))
        for line in left:
            os.kill(int(line.split()[0]), signal.SIGKILL)
    for failure in failures:
        say(f"FAILED: {failure}")
    if not failures:
        say("the README's run command served the admin and Ctrl-C stopped everything")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
