"""Argument checks done in Python so a rejected call never reaches (or half-writes) Redis.

Rules:
- queue names and new jids: ``[A-Za-z0-9_.:-]{1,128}``;
- existing jids (anything another qless client may have written, e.g. recurring spawns
  ``<jid>-<n>``): 1 to 1024 characters, no whitespace or control characters;
- worker names: ``[A-Za-z0-9_.:@-]{1,256}``; tags and failure groups: 1 to 256 characters,
  no control characters;
- worker names only read by (another client may have chosen them): 1 to 1024 characters,
  no control characters;
- queue names only read by (pages, metrics): any non-empty text, control characters
  included, since other qless clients create such queues and every one must be readable;
- no name holds a lone surrogate (``"\\ud800"``): it has no UTF-8 form, so Redis never sees it;
- numbers: real ints/floats (``bool`` refused), finite;
- counts: at least 1, clamped to `MAX_COUNT`;
- job data: a JSON object with string keys, encoded with ``allow_nan=False``, without lone
  surrogates, its integers within +-`MAX_SAFE_INTEGER` (what every client reads back).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .exceptions import InvalidArgumentError, JobDataError, PayloadTooLargeError

MAX_COUNT = 1000
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
WORKER_PATTERN = re.compile(r"[A-Za-z0-9_.:@-]{1,256}")
# Lone surrogates (\ud800-\udfff) are left out: they cannot be encoded as UTF-8.
EXISTING_JID_PATTERN = re.compile(r"[^\s\x00-\x1f\x7f\ud800-\udfff]{1,1024}")
LABEL_PATTERN = re.compile(r"[^\x00-\x1f\x7f\ud800-\udfff]{1,256}")
#: Names read back from Redis (a queue or worker another qless client chose): reads accept
#: any of them, so pages can show what any client wrote; writes use the strict rules above.
EXISTING_NAME_PATTERN = re.compile(r"[^\x00-\x1f\x7f\ud800-\udfff]{1,1024}")
#: A queue name read back from Redis: qless-core and its clients accept any string, so a
#: queue named with a newline or NUL exists and its counts and stats must stay readable.
EXISTING_QUEUE_PATTERN = re.compile(r"[^\ud800-\udfff]+")
#: Largest integer job data may hold: the Lua script's cjson and JavaScript read numbers as
#: doubles, which hold every integer up to 2**53 - 1 and lose digits beyond.
MAX_SAFE_INTEGER = 2**53 - 1
#: Deepest nesting job data may hold: well within the Lua script's cjson (1000 levels) and
#: within Python's recursion limit for the walks that check and encode it.
MAX_DEPTH = 500


def queue_name(value: object) -> str:
    """Check a queue name."""
    return _match(NAME_PATTERN, value, "queue name")


def new_jid(value: object) -> str:
    """Check a jid chosen for a new job or recurring job."""
    return _match(NAME_PATTERN, value, "jid")


def jid(value: object) -> str:
    """Check the jid of an existing job (any format a qless client may have used)."""
    return _match(EXISTING_JID_PATTERN, value, "jid")


def jids(values: Iterable[object]) -> list[str]:
    """Check a list of existing jids."""
    if isinstance(values, str):
        raise InvalidArgumentError("expected a list of jids, not a string")
    return [jid(value) for value in values]


def worker_name(value: object) -> str:
    """Check a worker name."""
    return _match(WORKER_PATTERN, value, "worker name")


def existing_name(value: object, what: str) -> str:
    """Check a queue or worker name to read by (lenient: any client may have written it)."""
    return _match(EXISTING_NAME_PATTERN, value, what)


def existing_queue_name(value: object) -> str:
    """Check a queue name to read by: any non-empty text another client may have chosen."""
    return _match(EXISTING_QUEUE_PATTERN, value, "queue name")


def label(value: object, what: str) -> str:
    """Check a tag, failure group or klass name."""
    return _match(LABEL_PATTERN, value, what)


def labels(values: Iterable[object], what: str) -> list[str]:
    """Check a list of tags."""
    if isinstance(values, str):
        raise InvalidArgumentError(f"expected a list of {what}s, not a string")
    return [label(value, what) for value in values]


def text(value: object, what: str) -> str:
    """Check a free-text argument (a failure message, a log message).

    A lone surrogate (no UTF-8 form) is written as its backslash escape instead: the text
    often comes from an exception a job raised, and refusing it would leave that job's
    failure unrecorded.
    """
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def number(value: object, what: str, *, minimum: float | None = None) -> float | int:
    """Check a finite int or float, optionally at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{what} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{what} must be finite, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{what} must be >= {minimum}, got {value!r}")
    return value


def positive(value: object, what: str) -> float | int:
    """Check a finite number > 0."""
    checked = number(value, what)
    if checked <= 0:
        raise InvalidArgumentError(f"{what} must be > 0, got {value!r}")
    return checked


def integer(value: object, what: str, *, minimum: int | None = None) -> int:
    """Check an int (not a bool), optionally at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{what} must be an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{what} must be >= {minimum}, got {value!r}")
    return value


def count(value: object, what: str = "count") -> int:
    """Check a page or pop size: at least 1, silently clamped to `MAX_COUNT`."""
    return min(integer(value, what, minimum=1), MAX_COUNT)


def offset(value: object, what: str = "offset") -> int:
    """Check a page offset."""
    return integer(value, what, minimum=0)


#: One encoder for every job: `json.dumps` with options builds a new one per call.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def encode_data(data: object, max_bytes: int) -> str:
    """Encode job data as compact JSON, refusing anything that would not round-trip."""
    if type(data) is not dict and not isinstance(data, Mapping):
        raise JobDataError(f"job data must be a JSON object (a dict), got {type(data).__name__}")
    try:
        _check_values(data)
        encoded = _encode(data)
    except RecursionError as exc:  # called from deep in a stack: the walk ran out first
        raise too_deep() from exc
    return data_size_checked(encoded, max_bytes)


def data_size_checked(encoded: str, max_bytes: int) -> str:
    """`encoded` job data, refused when its UTF-8 form is over `max_bytes` or has none."""
    if encoded.isascii():  # the usual case: one byte per character, no surrogate
        size = len(encoded)
        if size > max_bytes:
            raise PayloadTooLargeError(f"job data is {size} bytes, the limit is {max_bytes}")
        return encoded
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise JobDataError(f"job data holds a lone surrogate {bad!r}: no UTF-8 form") from exc
    if size > max_bytes:
        raise PayloadTooLargeError(f"job data is {size} bytes, the limit is {max_bytes}")
    return encoded


def too_deep() -> JobDataError:
    """The error of job data nested deeper than `MAX_DEPTH` (or than the stack allows)."""
    return JobDataError(f"job data is nested too deeply (at most {MAX_DEPTH} levels)")


def _encode(data: object) -> str:
    """Compact JSON of checked data; `JobDataError` for what JSON cannot hold."""
    try:
        return _ENCODER.encode(data)
    except (TypeError, ValueError) as exc:
        raise JobDataError(f"job data is not JSON-serialisable: {exc}") from exc


#: Types that are no Mapping, list or tuple: their values skip those (ABC) checks.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _check_values(value: Any, depth: int = 0) -> None:
    """Refuse what json.dumps would silently change (non-string keys become strings) or
    other clients would read back differently (integers beyond +-`MAX_SAFE_INTEGER`)."""
    if depth > MAX_DEPTH:
        raise too_deep()
    kind = type(value)
    if kind in _PLAIN:
        if kind is int:
            _check_integer(value)
        return
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                raise JobDataError(f"job data keys must be strings, got {key!r}")
            _check_values(item, depth + 1)
    elif kind is list or kind is tuple or isinstance(value, list | tuple):
        for item in value:
            _check_values(item, depth + 1)
    elif isinstance(value, int):
        _check_integer(value)


def _check_integer(value: int) -> None:
    """Refuse an integer beyond +-`MAX_SAFE_INTEGER` (see `_check_values`)."""
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        # str() of a huge int is slow (and refused past 4300 digits): name its size instead.
        shown = str(value) if value.bit_length() < 200 else f"of {value.bit_length()} bits"
        raise JobDataError(
            f"job data integer {shown} is beyond +-(2**53 - 1): other qless clients "
            "(the Lua script's cjson, JavaScript) would read it back with other digits"
        )


def decode_object(raw: str, what: str = "job data") -> dict[str, Any]:
    """Decode a JSON object stored by qless (any client may have written it)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise JobDataError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise JobDataError(f"{what} is not a JSON object: {raw[:100]!r}")
    return value


def _match(pattern: re.Pattern[str], value: object, what: str) -> str:
    """Check a string against a full-match pattern."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, got {type(value).__name__}")
    if not pattern.fullmatch(value):
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise InvalidArgumentError(f"invalid {what} {shown!r}: must match {pattern.pattern}")
    return value
