"""`QLESS["HOOKS"]`: the declared enqueue and run hooks, imported when the setting is read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils.module_loading import import_string

from ..core.hooks import HookSet
from .schema import HOOK_KEYS

if TYPE_CHECKING:
    from .reader import Reader

PATH = "QLESS['HOOKS']"


def read_hooks(reader: Reader, raw: Mapping[str, Any]) -> HookSet:
    """`HOOKS`: {"ENQUEUE": [...], "RUN": [...]}, each a dotted path or the callable itself."""
    value = raw.get("HOOKS", {})
    if not isinstance(value, Mapping):
        reader.error("E003", PATH, f"must be a dict with the keys {HOOK_KEYS}, got {value!r}")
        return HookSet()
    reader.unknown_keys(value, HOOK_KEYS, PATH)
    return HookSet(enqueue=_hooks(reader, value, "ENQUEUE"), run=_hooks(reader, value, "RUN"))


def _hooks(reader: Reader, raw: Mapping[str, Any], key: str) -> tuple[Any, ...]:
    """The hooks of one kind, imported; each one that is not usable is a problem."""
    declared = raw.get(key, ())
    where = f"{PATH}[{key!r}]"
    if isinstance(declared, str) or not isinstance(declared, list | tuple):
        reader.error("E003", where, f"must be a list of dotted paths, got {declared!r}")
        return ()
    hooks = []
    for index, entry in enumerate(declared):
        try:
            hooks.append(_hook(entry))
        except (ImportError, TypeError) as exc:
            reader.error("E060", f"{where}[{index}]", str(exc))
    return tuple(hooks)


def _hook(entry: object) -> Any:
    """A declared hook: the callable a dotted path names, or the callable given."""
    if isinstance(entry, str):
        try:
            found = import_string(entry)
        except ImportError as exc:
            raise ImportError(f"{entry!r} cannot be imported: {exc}") from exc
        if not callable(found):
            raise TypeError(f"{entry!r} names a {type(found).__name__}, not a callable")
        return found
    if callable(entry):
        return entry
    raise TypeError(f"must be a dotted path or a callable, got {entry!r}")
