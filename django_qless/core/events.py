"""Listen to qless' pub/sub channels (`ql:log`, per-event channels, `ql:w:<worker>`)."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import redis
import redis.client

from . import keys
from . import validation as check

if TYPE_CHECKING:
    from .client import Client

PLAIN_CHANNELS = keys.PLAIN_CHANNELS


@dataclass(frozen=True)
class Event:
    """One message: its channel, the jid it concerns, and the JSON payload if it had one."""

    channel: str
    jid: str | None
    payload: dict[str, Any] | None

    @property
    def kind(self) -> str:
        """`put`, `lock_lost`, `config_set`... (the payload's `event`, else the channel)."""
        if self.payload is not None and "event" in self.payload:
            return str(self.payload["event"])
        return keys.channel_name(self.channel)

    @classmethod
    def parse(cls, channel: str, data: str) -> Event:
        """Build from a raw message: JSON objects on `ql:log`/`ql:w:*`, a bare jid elsewhere."""
        payload: Any = None
        if data.startswith("{"):
            try:
                payload = json.loads(data)
            except ValueError:
                payload = None
        if isinstance(payload, dict):
            jid = payload.get("jid")
            return cls(channel, None if jid is None else str(jid), payload)
        return cls(channel, data or None, None)


class EventListener:
    """A pub/sub subscription that survives dropped connections (events sent meanwhile are lost)."""

    def __init__(
        self,
        client: Client,
        *,
        worker: str | None = None,
        channels: Iterable[str] = PLAIN_CHANNELS,
        reconnect_delay: float = 0.5,
    ) -> None:
        self.client = client
        self.channels = list(channels)
        if worker is not None:
            self.channels.append(keys.worker_channel(check.worker_name(worker)))
        self.reconnect_delay = reconnect_delay
        self.reconnects = 0
        self._pending: deque[Event] = deque()
        self._pubsub: redis.client.PubSub | None = None
        self._connect()

    def __enter__(self) -> EventListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event, waiting up to `timeout` seconds (None: forever); None on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            self._read(remaining)
        return self._pending.popleft()

    def listen(self, timeout: float | None = None) -> Iterator[Event]:
        """Yield events until none arrives for `timeout` seconds (None: forever)."""
        while (event := self.get(timeout)) is not None:
            yield event

    def close(self) -> None:
        """Unsubscribe and release the connection."""
        if self._pubsub is not None:
            self._pubsub.close()
            self._pubsub = None

    def _connect(self) -> redis.client.PubSub:
        """Subscribe, and wait for the confirmations so no later publish is missed."""
        pubsub: redis.client.PubSub = self.client.redis.pubsub()  # type: ignore[no-untyped-call,unused-ignore]
        self._pubsub = pubsub
        pubsub.subscribe(*self.channels)
        confirmed = 0
        deadline = time.monotonic() + 5
        while confirmed < len(self.channels) and time.monotonic() < deadline:
            message = pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] == "subscribe":
                confirmed += 1
            elif message is not None:
                self._keep(message)
        return pubsub

    def _read(self, timeout: float | None) -> None:
        """Read one message into the pending queue, reconnecting after a dropped connection."""
        try:
            pubsub = self._pubsub or self._connect()
            # redis-py types timeout as float, but None (block until a message) is supported.
            message = pubsub.get_message(timeout=timeout)  # type: ignore[arg-type]
        except redis.ConnectionError:
            self.close()
            self.reconnects += 1
            pause = self.reconnect_delay if timeout is None else min(self.reconnect_delay, timeout)
            time.sleep(pause)
            return
        if message is not None:
            self._keep(message)

    def _keep(self, message: dict[str, Any]) -> None:
        """Queue a published message as an Event (subscribe confirmations are skipped)."""
        if message["type"] not in ("message", "pmessage"):
            return
        channel, data = message["channel"], message["data"]
        if isinstance(channel, bytes):
            channel = channel.decode("utf-8")
        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="replace")
        self._pending.append(Event.parse(str(channel), str(data)))
