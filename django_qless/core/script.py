"""The packaged qless.lua: read once per process, called through redis-py's Script."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from typing import Any

import redis

from . import replies


@functools.cache
def script_text() -> str:
    """The Lua source shipped inside the package (read from disk once per process)."""
    resource = importlib.resources.files("django_qless.core").joinpath("qless.lua")
    return resource.read_text(encoding="utf-8")


@functools.cache
def script_sha() -> str:
    """SHA1 of the script, as Redis names it (log it to match a deployment with a build)."""
    return hashlib.sha1(script_text().encode("utf-8"), usedforsecurity=False).hexdigest()


class QlessScript:
    """Calls qless.lua on one Redis connection: `script(command, now, *args)`."""

    def __init__(self, connection: redis.Redis) -> None:
        self.connection = connection
        # register_script does EVALSHA, and on NOSCRIPT (SCRIPT FLUSH, restart) loads and retries.
        self._script = connection.register_script(script_text())

    @property
    def sha(self) -> str:
        """SHA1 the script is called by."""
        return str(self._script.sha)

    def __call__(self, command: str, now: float, *args: Any) -> Any:
        """Run one command; returns the reply with bytes decoded to str."""
        try:
            reply = self._script(keys=[], args=[command, now, *args])
        except redis.ResponseError as exc:
            typed = replies.error(command, exc)
            if typed is exc:
                raise
            raise typed from exc
        return replies.decode(command, reply)

    def queue_on(self, pipe: Any, command: str, now: float, *args: Any) -> None:
        """Buffer one command on a redis-py pipeline (its reply comes from `pipe.execute()`)."""
        # A redis-py Script inside a pipeline loads itself first when Redis lacks it.
        self._script(keys=[], args=[command, now, *args], client=pipe)

