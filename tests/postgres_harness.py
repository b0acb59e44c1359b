"""Start a private PostgreSQL cluster for the tests: initdb in a temporary directory, on loopback.

The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the newest), or the
directory of `initdb` on PATH. initdb and postgres refuse to run as root, so under root
they run as the `postgres` system user (or `nobody`), owner of the cluster's directory.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from tests.redis_harness import free_port

#: Where Debian's postgresql packages put their server binaries, one directory per version.
DEBIAN_BINARIES = Path("/usr/lib/postgresql")
#: The cluster's superuser (initdb -U): trusted on loopback and on the socket, no password.
SUPERUSER = "postgres"
#: Users the server may run as when the suite runs as root, in order of preference.
UNPRIVILEGED = ("postgres", "nobody")


class PostgresUnavailableError(RuntimeError):
    """No PostgreSQL server binaries, or no psycopg driver: the PostgreSQL tests cannot run."""


def find_binaries() -> Path:
    """The newest directory holding both initdb and postgres; PostgresUnavailableError if none."""
    candidates = [
        directory / "bin" for directory in DEBIAN_BINARIES.glob("*")
        if re.fullmatch(r"\d+(\.\d+)?", directory.name)
    ]
    candidates.sort(key=lambda path: tuple(int(part) for part in path.parent.name.split(".")),
                    reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    raise PostgresUnavailableError(
        f"no PostgreSQL server binaries (initdb and postgres) in {DEBIAN_BINARIES}/*/bin or "
        "on PATH: apt-get install postgresql (or your system's PostgreSQL server package)"
    )


def require_driver() -> None:
    """PostgresUnavailableError unless psycopg (the `test` extra's `psycopg[binary]`) imports."""
    try:
        import psycopg  # noqa: F401, PLC0415 - optional: only the PostgreSQL tests need it
    except ImportError as exc:
        raise PostgresUnavailableError(
            f"psycopg is not installed ({exc}): pip install -e '.[test]'"
        ) from exc


def postgres_unavailable(reason: str) -> NoReturn:
    """Skip with the reason on a developer's machine; fail under CI, where it must run."""
    if os.environ.get("CI"):
        pytest.fail(f"the PostgreSQL tests cannot run: {reason} (CI is set, so this is an "
                    "error, not a skip)")
    pytest.skip(f"the PostgreSQL tests need PostgreSQL: {reason}")


def run_as() -> pwd.struct_passwd | None:
    """The unprivileged user to run the server as when we are root; None when we are not."""
    if os.getuid() != 0:
        return None
    for name in UNPRIVILEGED:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailableError(
        f"running as root and none of the users {', '.join(UNPRIVILEGED)} exists: initdb "
        "and postgres refuse to run as root"
    )


@dataclass
class PostgresCluster:
    """A PostgreSQL cluster made and started by the tests; `stop` removes every trace."""

    binaries: Path
    directory: str = ""
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        return Path(self.directory) / "data"

    @property
    def log(self) -> Path:
        """The server's log file (read when it fails to start)."""
        return Path(self.directory) / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        """A postgres:// URL of one database of this cluster, as the superuser."""
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> PostgresCluster:
        """initdb, start the server and wait until it answers as the cluster we made."""
        user = run_as()
        self.directory = tempfile.mkdtemp(prefix="qless-postgres-")
        if user is not None:
            os.chown(self.directory, user.pw_uid, user.pw_gid)
        self._run(user, [
            str(self.binaries / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
            "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
        ])
        self.port = free_port()
        with self.log.open("wb") as log:
            if user is not None:
                os.chown(self.log, user.pw_uid, user.pw_gid)
            self.process = subprocess.Popen(  # noqa: S603 - fixed argument list
                [
                    str(self.binaries / "postgres"), "-D", str(self.data),
                    "-p", str(self.port), "-k", self.directory,
                    "-c", "listen_addresses=127.0.0.1",
                    # A throwaway cluster: durability buys nothing and costs the tests time.
                    "-c", "fsync=off", "-c", "synchronous_commit=off",
                    "-c", "full_page_writes=off",
                    # The fault tests connect from several processes, each with two aliases.
                    "-c", "max_connections=200",
                ],
                stdout=log, stderr=subprocess.STDOUT, **_as_user(user),
            )
        self._wait_until_ours()
        return self

    def _run(self, user: pwd.struct_passwd | None, args: list[str]) -> None:
        """Run a setup command as the cluster's owner; its output in the error if it fails."""
        done = subprocess.run(  # noqa: S603 - fixed argument list
            args, capture_output=True, text=True, check=False, cwd=self.directory,
            **_as_user(user),
        )
        if done.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): "
                               f"{done.stdout}{done.stderr}")

    def _wait_until_ours(self, timeout: float = 60) -> None:
        """Poll until the server answers with our data directory: never touch another one."""
        import psycopg  # noqa: PLC0415 - optional dependency, checked by require_driver

        assert self.process is not None
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}: "
                                   f"{self.log.read_text(errors='replace')}")
            try:
                with psycopg.connect(self.url(), connect_timeout=2) as conn:
                    row = conn.execute("SHOW data_directory").fetchone()
            except psycopg.OperationalError as exc:
                last_error = exc
                time.sleep(0.05)
                continue
            if row is None or Path(row[0]).resolve() != self.data.resolve():
                raise RuntimeError(f"port {self.port} is served by another PostgreSQL")
            return
        raise RuntimeError(f"postgres did not start: {last_error}")

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE DATABASE needs that)."""
        import psycopg  # noqa: PLC0415 - optional dependency, checked by require_driver

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql.encode())

    def tables(self, database: str) -> set[str]:
        """The tables of one database's public schema (empty when there is no such database)."""
        import psycopg  # noqa: PLC0415 - optional dependency, checked by require_driver

        try:
            with psycopg.connect(self.url(database)) as conn:
                found = conn.execute("SELECT tablename FROM pg_tables "
                                     "WHERE schemaname = 'public'").fetchall()
        except psycopg.OperationalError:
            return set()
        return {name for (name,) in found}

    def stop(self) -> None:
        """Stop the server at once (an immediate shutdown) and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def _as_user(user: pwd.struct_passwd | None) -> dict[str, object]:
    """Popen arguments that drop root for the child (nothing when we are not root)."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [],
            "env": {**os.environ, "HOME": user.pw_dir, "USER": user.pw_name}}
