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
