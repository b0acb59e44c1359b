"""`@qless_job`: turn a module-level function into a registered, typed `JobDefinition`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar, overload

from .definitions import JobDefinition, Unique, seconds
from .exceptions import InvalidJobError
from .registry import registry
from .retry import RetryPolicy
from .schedules import Cron, Every, Schedule

P = ParamSpec("P")
R = TypeVar("R")
#: What `recur=` accepts: a schedule, its timing alone, or several named schedules.
Recur = Schedule | Every | Cron | timedelta | float | Sequence[Schedule] | None


class Decorator(Protocol):
    """What `@qless_job(...)` returns: an `async def` function's value is its awaited one."""

    @overload
    def __call__(self, func: Callable[P, Coroutine[Any, Any, R]], /) -> JobDefinition[P, R]:
        ...

    @overload
    def __call__(self, func: Callable[P, R], /) -> JobDefinition[P, R]: ...

    def __call__(self, func: Callable[..., Any], /) -> JobDefinition[Any, Any]:
        """Register `func`."""


@overload
def qless_job(func: Callable[P, Coroutine[Any, Any, R]], /) -> JobDefinition[P, R]: ...


@overload
def qless_job(func: Callable[P, R], /) -> JobDefinition[P, R]: ...


@overload
def qless_job(
    *,
    name: str | None = None,
    queue: str | None = None,
    priority: float | None = None,
    tags: Sequence[str] = (),
    retries: int | None = None,
    delay: float | timedelta = 0,
    depends: Sequence[str] = (),
    tracked: bool = False,
    heartbeat: float | None = None,
    time_limit: float | None = None,
    retry_policy: RetryPolicy | None = None,
    takes_job: Literal[False] = False,
    connection: str | None = None,
    on_commit: bool | None = None,
    recur: Recur = None,
    store_result: bool | None = None,
    unique: Unique = False,
) -> Decorator: ...


@overload
def qless_job(
    *,
    name: str | None = None,
    queue: str | None = None,
    priority: float | None = None,
    tags: Sequence[str] = (),
    retries: int | None = None,
    delay: float | timedelta = 0,
    depends: Sequence[str] = (),
    tracked: bool = False,
    heartbeat: float | None = None,
    time_limit: float | None = None,
    retry_policy: RetryPolicy | None = None,
    takes_job: Literal[True],
    connection: str | None = None,
    on_commit: bool | None = None,
    recur: Recur = None,
    store_result: bool | None = None,
    unique: Unique = False,
) -> Callable[[Callable[Concatenate[Any, P], R]], JobDefinition[P, R]]: ...


def qless_job(func: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Register a function as a qless job klass (bare `@qless_job` or `@qless_job(...)`).

    The klass name defaults to `module.qualname`. With `takes_job=True` the function's
    first parameter, `job`, receives the running job and is not passed to `.enqueue()`.
    An `async def` function is awaited (on the worker's event loop in a worker).
    `store_result=True` keeps the return value for `.result(jid)` (None: the
    `QLESS['STORE_RESULTS']` setting).
    `recur=` declares recurring schedules that `manage.py qless_recur` writes to Redis.
    `unique=True` enqueues a call only while no job of its jid exists (see `JobDefinition`).
    """
    if func is not None:
        if options:
            raise InvalidJobError("use @qless_job or @qless_job(option=...), not both")
        return _register(func, {})
    return lambda f: _register(f, options)


def _register(func: Callable[..., Any], options: dict[str, Any]) -> JobDefinition[Any, Any]:
    """Build the definition for `func` and add it to the registry."""
    check_function(func)
    name = options.pop("name", None)
    if name is None:
        name = f"{func.__module__}.{func.__qualname__}"
    options["delay"] = seconds(options.get("delay", 0))
    try:
        defn: JobDefinition[Any, Any] = JobDefinition(func, name, **options)
    except TypeError as exc:  # an option name that does not exist
        raise InvalidJobError(f"@qless_job on {func.__qualname__}: {exc}") from exc
    return registry.register(defn)


def check_function(func: object) -> None:
    """Refuse what a worker could not import again by name: lambdas, nested functions."""
    if not callable(func):
        raise InvalidJobError(f"@qless_job needs a function, got {func!r}")
    if not inspect.isfunction(func):
        raise InvalidJobError(
            f"@qless_job needs a plain module-level function, got {type(func).__name__}"
        )
    if func.__name__ == "<lambda>":
        raise InvalidJobError("@qless_job cannot register a lambda: define a function")
    if "<locals>" in func.__qualname__:
        raise InvalidJobError(
            f"@qless_job cannot register nested function {func.__qualname__!r}: "
            "define it at module level so every worker process can find it"
        )
