"""A TCP fault proxy for tests: sits between qless clients and Redis and breaks the network.

Modes (switch at any time with `set_mode`, or the helpers):

- `pass`: bytes flow both ways as they come.
- `latency`: each chunk is delivered `uniform(low, high)` seconds after it was read, in
  order (a later chunk never overtakes an earlier one). `delay_replies(seconds)` delays
  only what Redis sends: commands run on time, their answers come late.
- `blackhole`: connections are accepted and read, but nothing is forwarded either way and
  no new connection reaches Redis. Every connection open during a blackhole stays one
  after `heal()` (its bytes are gone, as when a firewall or NAT forgets the flow): only
  its owner closing it, or a reset, ends it. Its owner must notice through a timeout.
  `blackhole(replies_only=True)` drops only what Redis sends: commands still run, their
  answers never come (an asymmetric partition: the case of a put applied but not acked).
- `reset`: every open connection is closed with a TCP RST, and so is each new one.

`heal()` goes back to `pass`. Threads only: one accept thread, and per connection one
reader and one writer per direction. Every socket read has a short timeout, so `close()`
stops everything within `POLL` seconds.
"""

from __future__ import annotations

import queue
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["pass", "latency", "blackhole", "reset"]
#: How often blocked reads and queue waits look at the closed flags.
POLL = 0.05
CHUNK = 65536
#: The two directions: "up" (client to Redis) and "down" (Redis to client).
BOTH = frozenset({"up", "down"})
#: redis-py options for the clients that go through the proxy: a command sent into a
#: blackhole fails after `SOCKET_TIMEOUT` seconds instead of waiting forever.
SOCKET_TIMEOUT = 2.0
CLIENT_OPTIONS = {"socket_timeout": SOCKET_TIMEOUT, "socket_connect_timeout": SOCKET_TIMEOUT}


@dataclass
class Stats:
    """What the proxy did: connections accepted, reset, and bytes forwarded or dropped."""

    accepted: int = 0
    reset: int = 0
    forwarded: int = 0
    dropped: int = 0
    #: Upstream connects that failed (Redis unreachable).
    upstream_errors: int = 0


@dataclass
class Link:
    """One client connection and its upstream connection."""

    number: int
    client: socket.socket
    upstream: socket.socket | None
    #: Directions dropped for good: "up" (to Redis), "down" (to the client).
    blackholed: set[str] = field(default_factory=set)
    closed: threading.Event = field(default_factory=threading.Event)
    #: Close the client side with an RST rather than a FIN.
    rst: bool = False
    #: Threads still using the sockets; the last one out closes them (never under a reader).
    users: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class FaultProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to `upstream_host:upstream_port`."""

    def __init__(self, upstream_host: str, upstream_port: int, seed: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.stats = Stats()
        self.mode: Mode = "pass"
        self.latency = (0.0, 0.0)
        #: The directions `latency` applies to.
        self.delayed: frozenset[str] = BOTH
        self._rng = random.Random(seed)
        self._dropped: frozenset[str] = frozenset()
        self._links: dict[int, Link] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL)
        self.port: int = self._listener.getsockname()[1]
        self._accepter = threading.Thread(target=self._accept_loop, name="proxy-accept",
                                          daemon=True)

    @property
    def url(self) -> str:
        """A redis:// URL that goes through the proxy."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> FaultProxy:
        """Start accepting connections."""
        self._accepter.start()
        return self

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._stopping.set()
        self._accepter.join(2)
        self._listener.close()
        with self._lock:
            links = list(self._links.values())
        for link in links:
            self._close(link, rst=False)

    # Modes.

    def set_mode(self, mode: Mode, dropped: frozenset[str] = BOTH) -> None:
        """Switch mode; `blackhole` (of the `dropped` directions) and `reset` act on open
        connections at once."""
        with self._lock:
            self.mode = mode
            self._dropped = dropped
            links = list(self._links.values())
            if mode == "blackhole":
                for link in links:
                    link.blackholed |= dropped
        if mode == "reset":
            for link in links:
                self._close(link, rst=True)

    def add_latency(self, low: float, high: float, directions: frozenset[str] = BOTH) -> None:
        """Delay every chunk (of `directions`) by `uniform(low, high)` seconds."""
        self.latency = (low, high)
        self.delayed = directions
        self.set_mode("latency")

    def delay_replies(self, seconds: float) -> None:
        """Deliver what Redis sends `seconds` late (commands go through on time)."""
        self.add_latency(seconds, seconds, frozenset({"down"}))

    def blackhole(self, replies_only: bool = False) -> None:
        """Accept and read, forward nothing (or nothing from Redis to the client)."""
        self.set_mode("blackhole", frozenset({"down"}) if replies_only else BOTH)

    def reset_all(self) -> None:
        """Reset every connection, now and until healed."""
        self.set_mode("reset")

    def heal(self) -> None:
        """Forward again (connections blackholed earlier stay black holes)."""
        self.latency = (0.0, 0.0)
        self.delayed = BOTH
        self.set_mode("pass")

    def open_links(self) -> int:
        """Connections currently open."""
        with self._lock:
            return len(self._links)

    # Threads.

    def _accept_loop(self) -> None:
        """Accept connections until closed."""
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        """Reset, blackhole or connect one new client connection."""
        # Under the lock, so a mode switched meanwhile cannot miss this connection.
        with self._lock:
            self.stats.accepted += 1
            if self.mode == "reset":
                self.stats.reset += 1
                _reset(client)
                return
            dropped = self._dropped if self.mode == "blackhole" else frozenset()
            upstream: socket.socket | None = None
            if "up" not in dropped:
                try:
                    upstream = socket.create_connection(self.upstream, timeout=2)
                except OSError:
                    self.stats.upstream_errors += 1
                    _reset(client)
                    return
            link = Link(self.stats.accepted, client, upstream, blackholed=set(dropped),
                        users=4 if upstream is not None else 1)
            self._links[link.number] = link
        for sock in (client, upstream):
            if sock is not None:
                sock.settimeout(POLL)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._pump(link, client, upstream, "up")
        if upstream is not None:
            self._pump(link, upstream, client, "down")

    def _pump(self, link: Link, source: socket.socket, target: socket.socket | None,
              direction: str) -> None:
        """Start the reader and writer threads of one direction."""
        chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()
        name = f"proxy-{link.number}-{direction}"
        threading.Thread(target=self._read, args=(link, source, chunks, direction),
                         name=name + "-read", daemon=True).start()
        if target is not None:
            threading.Thread(target=self._write, args=(link, target, chunks, direction),
                             name=name + "-write", daemon=True).start()

    def _read(self, link: Link, source: socket.socket, chunks: queue.Queue[tuple[float, bytes]],
              direction: str) -> None:
        """Read chunks and queue them with their delivery time (or drop them)."""
        last = 0.0
        while not link.closed.is_set():
            try:
                data = source.recv(CHUNK)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data or link.closed.is_set():
                break
            if direction in link.blackholed:
                self.stats.dropped += len(data)
                continue
            low, high = self.latency if direction in self.delayed else (0.0, 0.0)
            due = time.monotonic() + (self._rng.uniform(low, high) if high else 0.0)
            last = max(last, due)  # in order: never before the previous chunk
            chunks.put((last, data))
        self._close(link, rst=False)
        self._leave(link)

    def _write(self, link: Link, target: socket.socket,
               chunks: queue.Queue[tuple[float, bytes]], direction: str) -> None:
        """Send queued chunks at their delivery time."""
        while not link.closed.is_set():
            try:
                due, data = chunks.get(timeout=POLL)
            except queue.Empty:
                continue
            wait = due - time.monotonic()
            if wait > 0 and link.closed.wait(wait):
                break
            if link.closed.is_set():
                break
            if direction in link.blackholed:
                self.stats.dropped += len(data)
                continue
            if not _send(link, target, data):
                break
            self.stats.forwarded += len(data)
        self._close(link, rst=False)
        self._leave(link)

    def _close(self, link: Link, rst: bool) -> None:
        """Close both sides of a link (the client side with an RST when asked)."""
        with self._lock:
            if self._links.pop(link.number, None) is None:
                return
        link.rst = rst
        if rst:
            self.stats.reset += 1
        link.closed.set()

    def _leave(self, link: Link) -> None:
        """One thread of the link is done; the last closes the sockets."""
        with link.lock:
            link.users -= 1
            if link.users:
                return
        if link.rst:
            _reset(link.client)
        else:
            link.client.close()
        if link.upstream is not None:
            link.upstream.close()


def _send(link: Link, target: socket.socket, data: bytes) -> bool:
    """Send all of `data` unless the link closes first; False when it did or failed."""
    view = memoryview(data)
    while view:
        try:
            sent = target.send(view)
        except TimeoutError:
            if link.closed.is_set():
                return False
            continue
        except OSError:
            return False
        view = view[sent:]
    return True


def _reset(sock: socket.socket) -> None:
    """Close a socket so that the peer gets a TCP RST (SO_LINGER on, timeout 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
