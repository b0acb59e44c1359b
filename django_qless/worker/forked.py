"""What a job's child resets first: the locks other threads of the worker held at the fork.

A fork copies the forking thread alone: a lock another thread of the worker held at that
instant (a slot thread, the monitor, the event loop's thread) stays held in the child,
where no thread will ever release it. Python reinitialises the locks of `logging` and of
the import system itself; the child also needs:

- its standard output and error, and the files its logging handlers write to: a thread
  writing a line holds that stream's buffer lock, so the child writes through new stream
  objects on the same descriptors. The old ones stay referenced until the child exits:
  finalised, they would flush through their lock;
- the Redis connection pools it inherited: redis-py resets a pool for a new pid under the
  pool's own lock, so each pool gets new locks first (`_lock` and `_fork_lock`, as
  redis-py names them);
- `django_qless.connection`'s lock, under which the parent's clients are forgotten.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterable
from typing import Any, TextIO

import redis

from ..connection import forget_after_fork

#: The lock types a redis-py pool holds (its `_lock` is an RLock today).
_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())
#: The pool attributes redis-py takes in `_checkpid()` and `reset()` after a fork.
_POOL_LOCKS = ("_fork_lock", "_lock")
#: Objects of the parent kept referenced until `os._exit` (see the module docstring).
_inherited: list[Any] = []


def reset(clients: Iterable[redis.Redis]) -> None:
    """Make the child's streams and Redis pools usable whatever the parent's threads held;
    `clients`: redis-py clients the job may use besides `django_qless.connection`'s."""
    fresh_streams()
    for client in [*clients, *forget_after_fork()]:
        fresh_locks(client.connection_pool)


def fresh_streams() -> None:
    """New `sys.stdout` and `sys.stderr`, and new streams for the logging handlers, on the
    same descriptors."""
    renewed: dict[int, TextIO] = {}
    for name in ("stdout", "stderr"):
        old = getattr(sys, name)
        new = _renewed(old, renewed)
        if new is not None:
            setattr(sys, name, new)
            if getattr(sys, f"__{name}__", None) is old:
                setattr(sys, f"__{name}__", new)
    for handler in _stream_handlers():
        new = _renewed(handler.stream, renewed)
        if new is not None:
            # Assigned, not `setStream()`: that flushes the old stream, through its lock.
            handler.stream = new


def _renewed(old: Any, renewed: dict[int, TextIO]) -> TextIO | None:
    """A new text stream on the descriptor of `old` (one per old stream); None for a stream
    that is not a file (nothing of it to inherit)."""
    if id(old) in renewed:
        return renewed[id(old)]
    if not isinstance(old, io.TextIOWrapper):
        return None
    try:
        fd = old.fileno()
    except (OSError, ValueError):
        return None
    new = open(fd, "w", closefd=False,  # noqa: PTH123, SIM115 - a descriptor, kept open
               encoding=old.encoding, errors=old.errors,
               buffering=1 if old.line_buffering else -1)
    _inherited.append(old)
    renewed[id(old)] = new
    return new


def flush_streams() -> None:
    """Write out what the job printed (the child ends with `os._exit`, which does not)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()


def fresh_locks(pool: object) -> None:
    """Give a redis-py connection pool new locks before it resets itself for this pid."""
    for name in _POOL_LOCKS:
        lock = getattr(pool, name, None)
        if isinstance(lock, _RLOCK):
            setattr(pool, name, threading.RLock())
        elif isinstance(lock, _LOCK):
            setattr(pool, name, threading.Lock())


def _stream_handlers() -> list[logging.StreamHandler[Any]]:
    """Every `StreamHandler` attached to a logger of this process."""
    loggers = [logging.getLogger(),
               *(entry for entry in logging.Logger.manager.loggerDict.values()
                 if isinstance(entry, logging.Logger))]
    return [handler for each in loggers for handler in each.handlers
            if isinstance(handler, logging.StreamHandler)]
