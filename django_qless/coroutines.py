"""Calling job functions that may be `async def`, on the worker's loop when there is one.

A worker thread installs its event loop (`install`): every coroutine of a job it runs is
awaited there, so one loop serves all the jobs of a worker process. Elsewhere (`.call()`,
immediate mode, tests) a coroutine runs to completion through asgiref's `async_to_sync`.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Deferred:
    """A job's coroutine, made but not awaited: what `invoke` returns under `deferring`."""

    coroutine: Coroutine[Any, Any, Any]


class _Defer:
    """The runner that hands each coroutine back unawaited (`deferring`)."""

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Deferred:
        """`coroutine`, to be awaited by the caller of `invoke`."""
        return Deferred(coroutine)


@contextmanager
def deferring() -> Iterator[None]:
    """Within it, `invoke` of an `async def` function returns its `Deferred` coroutine: the
    worker's event loop checks and decodes a job's arguments there, then awaits it itself."""
    previous = getattr(_local, "runner", None)
    _local.runner = _Defer()
    try:
        yield
    finally:
        _local.runner = previous


def invoke(func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """Call a job function; an `async def` one is awaited to completion."""
    if not inspect.iscoroutinefunction(func):
        return func(*args, **kwargs)
    runner: CoroutineRunner | None = getattr(_local, "runner", None)
    if runner is None:
        return async_to_sync(func)(*args, **kwargs)
    return runner.run(func(*args, **kwargs))
