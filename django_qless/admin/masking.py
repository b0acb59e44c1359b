"""The one rule for secrets on the admin pages, for JSON and for free text alike.

JSON (job data, return values, history entries' fields): the value of every key that
contains a masked data key (`QLESS['ADMIN']['MASKED_DATA_KEYS']`) becomes `MASK`.
Free text (failure messages, tracebacks, log messages): every match of a masked pattern
(`QLESS['ADMIN']['MASKED_PATTERNS']`; its groups when it has some) and the value of every
`key=value`, `key: value` or `"key": "value"` pair whose key contains a masked data key
become `MASK`. Users without the `view_job_data` permission see neither data nor free text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conf import get_settings

MASK = "********"

#: A pair's value: a quoted string (escapes allowed), an HTTP scheme and its credentials, or
#: a run of characters up to a space or punctuation that closes a pair.
_VALUE = (
    r"\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?"
    r"|(?:(?:Bearer|Basic|Token)\s+)?[^\s,;&\"'<>(){}\[\]]+"
)


@dataclass(frozen=True)
class Masker:
    """Masks secrets in decoded JSON and in text, following the `ADMIN` setting."""

    keys: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    pairs: re.Pattern[str] | None

    def data(self, value: Any) -> Any:
        """A copy of decoded JSON with the values of sensitive keys replaced by `MASK`."""
        if isinstance(value, Mapping):
            return {
                key: MASK if is_sensitive(str(key), self.keys) else self.data(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.data(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        """Free text with pattern matches and the values of sensitive pairs masked."""
        for pattern in self.patterns:
            text = pattern.sub(_masked_match, text)
        if self.pairs is not None:
            text = self.pairs.sub(_masked_pair, text)
        return text


def is_sensitive(key: str, keys: tuple[str, ...]) -> bool:
    """Whether a data key names a secret (case-insensitive substring match)."""
    lowered = key.lower()
    return any(word in lowered for word in keys)


def _masked_match(match: re.Match[str]) -> str:
    """A pattern's match with its groups (or, without groups, all of it) masked."""
    if not match.re.groups:
        return MASK if match.end() > match.start() else ""
    base = match.start()
    spans = sorted(
        (match.start(i) - base, match.end(i) - base)
        for i in range(1, match.re.groups + 1)
        if match.end(i) > match.start(i) >= 0
    )
    return _replace_spans(match.group(), spans)


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each (start, end) span, outer ones first, replaced by `MASK`."""
    pieces, cursor = [], 0
    for low, high in spans:
        if low < cursor:  # nested in a span already masked
            continue
        pieces += [text[cursor:low], MASK]
        cursor = high
    return "".join([*pieces, text[cursor:]])


def _masked_pair(match: re.Match[str]) -> str:
    """A sensitive `key=value` pair with its value masked (its quotes kept)."""
    value = match.group("value")
    quote = value[0] if value[:1] in ('"', "'") else ""
    return f"{match.group('key')}{quote}{MASK}{quote}"


def pair_pattern(keys: tuple[str, ...]) -> re.Pattern[str] | None:
    """The pattern of `key=value`-style pairs whose key contains one of `keys`."""
    if not keys:
        return None
    words = "|".join(re.escape(key) for key in sorted(keys, key=len, reverse=True))
    key = rf"[\"']?[\w.-]*(?:{words})[\w.-]*[\"']?\s*[:=]\s*"
    return re.compile(rf"(?P<key>{key})(?P<value>{_VALUE})", re.IGNORECASE)


@functools.lru_cache(maxsize=8)
def build(keys: tuple[str, ...], patterns: tuple[str, ...]) -> Masker:
    """A masker for these keys and patterns (compiled once per setting)."""
    return Masker(keys, tuple(re.compile(p) for p in patterns), pair_pattern(keys))


def masker() -> Masker:
    """The masker of the current `QLESS['ADMIN']` setting."""
    admin = get_settings().admin
    return build(admin.masked_data_keys, admin.masked_patterns)


@dataclass(frozen=True)
class Redaction:
    """What one user may see of job data and free text: masked, or nothing at all."""

    masker: Masker
    #: The user holds `view_job_data`: data and text are shown, masked.
    shows_data: bool

    def text(self, text: str) -> str:
        """Free text, masked; "" for a user who may not see it."""
        return self.masker.text(text) if self.shows_data else ""

    def data(self, value: Any) -> Any:
        """Decoded JSON, masked; None for a user who may not see it."""
        return self.masker.data(value) if self.shows_data else None


def redaction(shows_data: bool) -> Redaction:
    """The redaction for a user who does (or does not) hold `view_job_data`."""
    return Redaction(masker(), shows_data)
