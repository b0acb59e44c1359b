"""The one decoder of script replies: bytes become text, errors become typed exceptions.

Every path that runs the script (`QlessScript` for single calls, `Batch` for several in
one round trip, transactions of recurring templates) hands what Redis answered to
`decode`, so a given reply means the same exception everywhere:
- the script's own refusals become the `ScriptError` subclass the message calls for
  (`ERROR_TABLE`, first match wins);
- NOSCRIPT (Redis restarted or flushed its scripts), and an FCALL of the function library
  that did not run (`not_run`), become `ScriptNotLoadedError`;
- an out-of-memory refusal of a command that adds a job becomes `QueueFullError`, and
  stays redis-py's `OutOfMemoryError` for the others;
- any other error (a lost connection, a read-only replica) is returned unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import redis

from .exceptions import (
    DependencyError,
    JobGoneError,
    JobNotFoundError,
    JobStateError,
    LockLostError,
    QueueFullError,
    ScriptArgumentError,
    ScriptError,
    ScriptNotLoadedError,
)

#: Commands whose "not yours any more" replies mean the caller lost the job's lock.
LOCK_COMMANDS = frozenset({"complete", "complete.pop", "fail", "retry", "heartbeat"})
#: Commands that add a job or a template: refused whole (nothing written) when Redis is full.
GROWING_COMMANDS = frozenset({"put", "requeue", "put.ifabsent", "put.many", "recur"})

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

#: What Redis answers an FCALL that did not run: the library is not loaded (a restart,
#: `FUNCTION FLUSH`), or Redis has no functions or does not let this user call them.
_NOT_RUN = re.compile(
    r"^Function not found|unknown command .fcall|permissions? to run the .fcall", re.I
)

# Redis 7: "user_script:12: msg script: <sha>, on @user_script:12."; in the function
# library "user_function:12: msg script: <library>, on @user_function:12."
# Redis <= 6.2: "Error running script (call to f_<sha>): @user_script:12: user_script:12: msg"
_POSITION = re.compile(r"^@?user_(?:script|function):\d+:\s*")
_TRAILER = re.compile(
    r"\s*script: (?:[0-9a-f]{40}|django_qless_[0-9a-f]+), on @user_(?:script|function):\d+\.\s*$",
    re.S,
)
_RUNNING = re.compile(r"^Error running script \(call to f_[0-9a-f]{40}\):\s*", re.S)


def decode(command: str, reply: Any) -> Any:
    """One reply of `command`: text for bytes (lists item by item); errors as exceptions."""
    if isinstance(reply, bytes):
        return reply.decode("utf-8")
    if isinstance(reply, list):
        return [decode(command, item) for item in reply]
    if isinstance(reply, Exception):
        return error(command, reply)
    return reply


def error(command: str, exc: Exception) -> Exception:
    """The exception that an error answered to `command` stands for."""
    if isinstance(exc, redis.exceptions.NoScriptError) or not_run(exc):
        return ScriptNotLoadedError(f"{command}: Redis does not have the qless script: {exc}")
    if isinstance(exc, redis.exceptions.OutOfMemoryError):
        if command in GROWING_COMMANDS and not isinstance(exc, QueueFullError):
            # Refused at the script's first write: nothing was written.
            return QueueFullError(f"Redis refused the {command} (maxmemory): {exc}")
        return exc
    # Subclasses (ReadOnlyError, ...) are Redis refusing the call, not the script refusing
    # the arguments: they stay as they are.
    if type(exc) is redis.ResponseError and is_script_error(exc):
        message = clean_message(str(exc))
        return classify(command, message)(command, message)
    return exc


def not_run(error: Exception) -> bool:
    """True when Redis answered an FCALL of the library without running it."""
    return isinstance(error, redis.ResponseError) and _NOT_RUN.search(str(error)) is not None


def is_script_error(error: redis.ResponseError) -> bool:
    """True when a ResponseError came from inside the script rather than from Redis itself."""
    text = str(error)
    return (
        "user_script" in text
        or "user_function" in text
        or _TRAILER.search(text) is not None
        or _RUNNING.match(text) is not None
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
