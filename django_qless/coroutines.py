"""Calling job functions that may be `async def`, on the worker's loop when there is one.

A worker thread installs its event loop (`install`): every coroutine of a job it runs is
awaited there, so one loop serves all the jobs of a worker process. Elsewhere (`.call()`,
immediate mode, tests) a coroutine runs to completion through asgiref's `async_to_sync`.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from asgiref.sync import async_to_sync


class CoroutineRunner(Protocol):
    """Runs a coroutine to its end and returns its value (the worker's event loop)."""

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Await `coroutine` and return what it returns."""


_local = threading.local()


def install(runner: CoroutineRunner | None) -> None:
    """Make `runner` run this thread's job coroutines (None: back to `async_to_sync`)."""
    _local.runner = runner


def invoke(func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """Call a job function; an `async def` one is awaited to completion."""
    if not inspect.iscoroutinefunction(func):
        return func(*args, **kwargs)
    runner: CoroutineRunner | None = getattr(_local, "runner", None)
    if runner is None:
        return async_to_sync(func)(*args, **kwargs)
    return runner.run(func(*args, **kwargs))
