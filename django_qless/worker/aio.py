"""The worker's event loop: one per worker, created at the first `async def` job, reused.

A coroutine runs as a task on the loop. A time limit or a lost lock cancels that task
(`Interrupter.cancel_with`) instead of raising into the loop's own code, and the task is
awaited until its cancellation is done, so the loop is left clean for the next job; the
interruption then surfaces as its usual `JobInterrupted` subclass.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from .interrupt import Interrupter


class JobLoop:
    """Runs job coroutines on one event loop, cancelling them when the job is interrupted."""

    def __init__(self, interrupter: Interrupter) -> None:
        self.interrupter = interrupter
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop, created on first use."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Await a job's coroutine; `JobInterrupted` once it was cancelled for a reason."""
        loop = self.loop
        task = loop.create_task(coroutine)
        try:
            self.interrupter.cancel_with(lambda: loop.call_soon_threadsafe(task.cancel))
            try:
                value = loop.run_until_complete(task)
            except asyncio.CancelledError:
                if self.interrupter.pending is None:
                    raise RuntimeError("the job's coroutine was cancelled") from None
            # Also when the coroutine swallowed its cancellation: the job was stopped.
            if self.interrupter.pending is not None:
                raise self.interrupter.pending()
            return value
        finally:
            self.interrupter.cancel_with(None)
            if not task.done():  # left by an exception raised outside the task
                task.cancel()
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(task)

    def close(self) -> None:
        """Close the loop (at worker shutdown)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
        self._loop = None
