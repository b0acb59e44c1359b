"""The packaged qless.lua: read once per process, called through redis-py's Script."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import re
from typing import Any

import redis

from .exceptions import (
    DependencyError,
    JobGoneError,
    JobNotFoundError,
    JobStateError,
    LockLostError,
    ScriptArgumentError,
    ScriptError,
)

#: Commands whose "not yours any more" replies mean the caller lost the job's lock.
LOCK_COMMANDS = frozenset({"complete", "fail", "retry", "heartbeat"})

_LOCK_LOST = re.compile(
    r"not currently running|(handed|given)( out)? to another worker"
    r"|running with another worker|running in another queue"
)

#: The one table mapping the script's messages to exception classes; first match wins.
#: Each entry: (pattern, class, commands it applies to or None for all).
ERROR_TABLE: tuple[tuple[re.Pattern[str], type[ScriptError], frozenset[str] | None], ...] = (
    (_LOCK_LOST, LockLostError, LOCK_COMMANDS),
    (re.compile(r"does not exist"), JobGoneError, LOCK_COMMANDS),
    (re.compile(r"does not exist|No recurring job"), JobNotFoundError, None),
    (re.compile(r"is a dependency of|cycle|depend on itself"), DependencyError, None),
    (
        re.compile(r"not in the depends state|not running"),
        JobStateError,
        None,
    ),
    (
        re.compile(
            r"Arg(ument)? \"|[Mm]issing|not a number|not JSON|Expected |Odd number"
            r"|must be|Unknown |Unrecognized option|No value provided|unknown|cannot be used"
        ),
        ScriptArgumentError,
        None,
    ),
)

# Redis 7: "user_script:12: msg script: <sha>, on @user_script:12."
# Redis <= 6.2: "Error running script (call to f_<sha>): @user_script:12: user_script:12: msg"
_POSITION = re.compile(r"^@?user_script:\d+:\s*")
_TRAILER = re.compile(r"\s*script: [0-9a-f]{40}, on @user_script:\d+\.\s*$", re.S)
_RUNNING = re.compile(r"^Error running script \(call to f_[0-9a-f]{40}\):\s*", re.S)


@functools.cache
def script_text() -> str:
    """The Lua source shipped inside the package (read from disk once per process)."""
    resource = importlib.resources.files("django_qless.core").joinpath("qless.lua")
    return resource.read_text(encoding="utf-8")


@functools.cache
def script_sha() -> str:
    """SHA1 of the script, as Redis names it (log it to match a deployment with a build)."""
    return hashlib.sha1(script_text().encode("utf-8"), usedforsecurity=False).hexdigest()


def is_script_error(error: redis.ResponseError) -> bool:
    """True when a ResponseError came from inside the script rather than from Redis itself."""
    text = str(error)
    return "user_script" in text or _TRAILER.search(text) is not None or (
        _RUNNING.match(text) is not None
    )


def clean_message(text: str) -> str:
    """Strip Redis' wrapping and the Lua position from a script error."""
    text = _TRAILER.sub("", text)
    text = _RUNNING.sub("", text)
    while _POSITION.match(text):
        text = _POSITION.sub("", text, count=1)
    return text.strip()


def classify(command: str, message: str) -> type[ScriptError]:
    """Pick the exception class for a script error message."""
    for pattern, cls, commands in ERROR_TABLE:
        if (commands is None or command in commands) and pattern.search(message):
            return cls
    return ScriptError


def translate(command: str, error: redis.ResponseError) -> ScriptError:
    """Turn a ResponseError raised by the script into the matching `ScriptError` subclass."""
    message = clean_message(str(error))
    return classify(command, message)(command, message)


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
            # Subclasses (NoScriptError, OutOfMemoryError, ReadOnlyError...) are Redis refusing
            # the call, not the script refusing the arguments: let them through unchanged.
            if type(exc) is not redis.ResponseError or not is_script_error(exc):
                raise
            raise translate(command, exc) from exc
        return _decode(reply)


def _decode(reply: Any) -> Any:
    """Decode bytes replies (for connections made without decode_responses)."""
    if isinstance(reply, bytes):
        return reply.decode("utf-8")
    if isinstance(reply, list):
        return [_decode(item) for item in reply]
    return reply
