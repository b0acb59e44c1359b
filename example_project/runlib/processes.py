"""The manage.py children of run.py: one-off commands and long-running services."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

STOP_TIMEOUT = 20.0


class Processes:
    """Runs manage.py commands; keeps the long-running ones to stop them in reverse order."""

    def __init__(self, manage_py: Path, env: dict[str, str], say: Callable[[str], None]) -> None:
        self.manage_py = manage_py
        self.env = env
        self.say = say
        self.children: list[tuple[str, subprocess.Popen[bytes], bool]] = []

    def command(self, *args: str) -> list[str]:
        """The argv of a manage.py command run with this Python."""
        return [sys.executable, str(self.manage_py), *args]

    def manage(self, *args: str, check: bool = True, capture: bool = False,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a manage.py command to its end (raises CalledProcessError when `check`).

        With `capture` its output is returned instead of shown, unless the command fails.
        """
        out = subprocess.PIPE if capture else None
        result = subprocess.run(  # noqa: S603 - our own manage.py with fixed arguments
            self.command(*args), cwd=self.manage_py.parent, env={**self.env, **(env or {})},
            stdout=out, stderr=out, text=True, check=False,
        )
        if check and result.returncode != 0:
            if capture:
                self.say((result.stdout or "") + (result.stderr or ""))
            raise subprocess.CalledProcessError(result.returncode, ["manage.py", *args])
        return result

    def spawn(self, name: str, *args: str, own_group: bool = False, quiet: bool = False,
              log: Path | None = None) -> subprocess.Popen[bytes]:
        """Start a long-running manage.py command in its own session.

        Its own session keeps the terminal's Ctrl-C away from it, so run.py decides the
        order of shutdown. `own_group` children are stopped by signalling their whole process
        group (runserver's autoreloader runs the server in a child process); the others
        get the signal alone (the worker's supervisor forwards it to its processes itself).
        With `log`, its output is appended to that file; with `quiet`, dropped.
        """
        if log is not None:
            with log.open("ab") as handle:  # the child keeps its own copy of the descriptor
                process = self._start(args, handle, subprocess.STDOUT)
        else:
            out = subprocess.DEVNULL if quiet else None
            process = self._start(args, out, out)
        self.children.append((name, process, own_group))
        return process

    def _start(self, args: tuple[str, ...], stdout: int | IO[bytes] | None,
               stderr: int | None) -> subprocess.Popen[bytes]:
        """Popen a manage.py command in a new session, stdin closed."""
        return subprocess.Popen(  # noqa: S603 - our own manage.py with fixed arguments
            self.command(*args), cwd=self.manage_py.parent, env=self.env,
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True,
        )

    def first_exited(self) -> str | None:
        """The name of a child that has exited, if any."""
        for name, process, _ in self.children:
            if process.poll() is not None:
                return f"{name} (exit status {process.returncode})"
        return None

    def stop_all(self) -> None:
        """SIGTERM each child, newest first, waiting for each; SIGKILL the ones that hang."""
        while self.children:
            name, process, own_group = self.children.pop()
            if process.poll() is None:
                self._signal(process, signal.SIGTERM, own_group)
                try:
                    process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.say(f"==> {name} did not stop in {STOP_TIMEOUT:.0f}s; killing it")
                    self._signal(process, signal.SIGKILL, own_group)
                    process.wait()
            if own_group:
                # Whatever it left in its group (runserver's reloaded child) goes too.
                self._signal(process, signal.SIGKILL, own_group)

    @staticmethod
    def _signal(process: subprocess.Popen[bytes], signum: int, group: bool) -> None:
        """Signal a child, or its whole process group."""
        try:
            if group:
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
        except ProcessLookupError:
            pass


def wait_http(url: str, procs: Processes, *, timeout: float) -> None:
    """Wait until `url` answers (any HTTP status); fail early if a child exits meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exited = procs.first_exited()
        if exited:
            raise RuntimeError(f"{exited} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own local server
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s")
