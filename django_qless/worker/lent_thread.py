"""A slot thread lent to an `async def` job the event loop runs itself, for its sync calls.

Django's async ORM and every `sync_to_async` call run thread-sensitive code in the thread
its caller stands for, in order. A job the loop runs without a thread of its own
(`loop_jobs`) gets one only at its first such call: an idle slot thread (there always is
one, as the job holds one of the N slots) runs its calls in order until the job ends,
with that thread's database connections checked before the first call and after the
last, as around a plain function. A job that makes no such call costs no thread at all.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from .databases import ConnectionHygiene

#: One call to run: where its result goes, the function, its arguments.
Call = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


@dataclass
class Loan:
    """A slot thread's work for one job: its calls in order, then back to the pool."""

    calls: queue.SimpleQueue[Call | None] = field(default_factory=queue.SimpleQueue)
    #: Done once the thread ran the job's last call and checked its connections.
    returned: Future[None] = field(default_factory=Future)

    def serve(self, databases: ConnectionHygiene) -> None:
        """Run the job's calls as they come, until it ends (in the lent slot thread)."""
        try:
            databases.before_job()
            while (call := self.calls.get()) is not None:
                future, function, args, kwargs = call
                if not future.set_running_or_notify_cancel():
                    continue  # the job was cancelled before this call began
                try:
                    result = function(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - raised again in the job's task
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            databases.after_job()
        finally:
            self.returned.set_result(None)


class LentThread(Executor):
    """The executor of one loop job's thread-sensitive calls: a slot thread, lent on first use."""

    def __init__(self, lend: Callable[[Loan], None]) -> None:
        self._lend = lend
        self._loan: Loan | None = None
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Run `fn` in the job's thread, after its earlier calls (asked for by asyncio)."""
        if self._closed:
            raise RuntimeError("the job has ended: its thread-sensitive calls cannot run")
        if self._loan is None:
            self._loan = Loan()
            self._lend(self._loan)
        future: Future[Any] = Future()
        self._loan.calls.put((future, fn, args, kwargs))
        return future

    def close(self) -> Future[None] | None:
        """The job ended: no more calls. Done once its thread is back (None: it had none)."""
        self._closed = True
        if self._loan is None:
            return None
        self._loan.calls.put(None)
        return self._loan.returned
