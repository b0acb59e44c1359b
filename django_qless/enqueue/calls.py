"""The calls of a bulk enqueue: `(args, kwargs)` pairs, their shape checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..exceptions import InvalidJobError

#: One call of a bulk enqueue: its positional and its keyword arguments.
Call = tuple[Sequence[Any], Mapping[str, Any]]


def split_call(call: object) -> Call:
    """`(args, kwargs)` of one call, refusing any other shape."""
    if type(call) is tuple and len(call) == 2:  # the usual shape, without the checks below
        args, kwargs = call
        if type(args) is tuple and type(kwargs) is dict:
            return args, kwargs
    if not isinstance(call, tuple | list) or len(call) != 2:
        raise InvalidJobError(
            f"each call must be an (args, kwargs) pair, got {type(call).__name__}"
        )
    args, kwargs = call
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise InvalidJobError(f"args must be a list or tuple, got {type(args).__name__}")
    if not isinstance(kwargs, Mapping):
        raise InvalidJobError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    return args, kwargs


def note_position(exc: BaseException, text: str) -> None:
    """Add `text` to the notes of a bulk call's error (`__notes__`, also on Python 3.10)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(text)
    else:  # Python 3.10: no add_note yet; tracebacks do not show notes, the error keeps them
        notes = getattr(exc, "__notes__", None)
        if not isinstance(notes, list):
            notes = []
            setattr(exc, "__notes__", notes)  # noqa: B010 - typeshed knows it from 3.11 only
        notes.append(text)
