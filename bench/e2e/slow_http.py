"""A local HTTP server that answers every GET after a fixed delay: the I/O jobs' remote API.

It runs an asyncio loop in a daemon thread of the bench process, so hundreds of requests
wait at once at the cost of a timer each, and it is stopped with the bench.
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType

BODY = b"ok\n"
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
            + str(len(BODY)).encode() + b"\r\nConnection: close\r\n\r\n" + BODY)


class SlowServer:
    """Serves GET on 127.0.0.1 (an ephemeral port), answering each request after `delay` s."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.port = 0
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="slow-http",
                                        daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """The address the jobs GET."""
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> SlowServer:
        """Listen and serve from the thread; returns once the port is bound."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        future.result(timeout=10)
        return self

    async def _listen(self) -> None:
        # A backlog above every configuration's concurrency: 200 jobs connect at once.
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read the request head, wait `delay`, answer 200 and close."""
        try:
            await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(self.delay)
            self.requests += 1  # before the answer, so a client that has it sees the count
            writer.write(RESPONSE)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away: nothing to answer
        finally:
            writer.close()

    def stop(self) -> None:
        """Close the listener and end the loop's thread."""
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> SlowServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
