"""The event loop of a worker that runs several jobs at once, in a thread of its own.

With `--concurrency N` every `async def` job of the process runs as a task on this one
loop, so its coroutines overlap with each other and with the threads' jobs. The slot
that took the job waits for its task (`SlotCoroutines.run`); an interruption (time
limit, lost lock, fence, shutdown timeout) cancels that task alone through the slot's
`Interrupter.cancel_with`, and the slot waits until the cancellation is done, so the job
is over when its outcome is reported.

While its task runs, the slot thread runs the job's thread-sensitive `sync_to_async`
calls (Django's async ORM among them), as `async_to_sync` makes the calling thread do:
an async job uses its slot's database connections, checked and closed around it as a
plain function's are, not the one thread (and one never-checked connection) asgiref
would otherwise share between every coroutine of the process.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Executor, Future
from typing import Any, cast

from asgiref.current_thread_executor import CurrentThreadExecutor
from asgiref.sync import AsyncToSync

from .interrupt import Interrupter


class LoopThread:
    """One event loop running forever in a daemon thread, started at the first async job."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started on first use)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, daemon=True,
                                                name=f"qless-loop-{self.name}")
                self._thread.start()
                self._loop = loop
            return self._loop

    def close(self) -> None:
        """Stop the loop and its thread (at worker shutdown, once no job runs)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        future = asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop)
        try:
            future.result(timeout=2)
        except Exception:  # noqa: BLE001 - a loop blocked by a job: it ends with the process
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2)
        if not thread.is_alive():
            loop.close()


class SlotCoroutines:
    """Runs one slot's job coroutines on the shared loop (a `coroutines.CoroutineRunner`)."""

    def __init__(self, loops: LoopThread, interrupter: Interrupter) -> None:
        self.loops = loops
        self.interrupter = interrupter

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Await `coroutine` as a task; `JobInterrupted` once it was cancelled for a reason."""
        loop = self.loops.loop
        executor = current_thread_executor()
        done: Future[None] = Future()
        tasks: list[asyncio.Task[Any]] = []

        def start() -> None:
            task = loop.create_task(served_by(executor, coroutine))
            task.add_done_callback(lambda _: done.set_result(None))
            tasks.append(task)

        # `start` is queued first, so the task exists when a cancel comes after it.
        loop.call_soon_threadsafe(start)
        self.interrupter.cancel_with(
            lambda: loop.call_soon_threadsafe(lambda: tasks[0].cancel()))
        try:
            executor.run_until_future(done)  # the job's sync calls, until its task ended
        finally:
            self.interrupter.cancel_with(None)
        task = tasks[0]
        if task.cancelled():
            if self.interrupter.pending is None:
                raise RuntimeError("the job's coroutine was cancelled")
            raise self.interrupter.pending()
        # Also when the coroutine swallowed its cancellation: the job was stopped.
        if self.interrupter.pending is not None:
            raise self.interrupter.pending()
        error = task.exception()
        if error is not None:
            raise error
        return task.result()


async def served_by(executor: Executor, coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Await `coroutine`, its thread-sensitive sync calls sent to `executor` (this task's
    context only: asgiref looks there first, as under `async_to_sync`)."""
    AsyncToSync.executors.current = executor
    return await coroutine


def current_thread_executor() -> CurrentThreadExecutor:
    """A `CurrentThreadExecutor` of the calling thread (asgiref 3.9 and later take the one
    it stands in for: none here)."""
    make: Any = CurrentThreadExecutor
    try:
        return cast(CurrentThreadExecutor, make(None))
    except TypeError:
        return cast(CurrentThreadExecutor, make())
