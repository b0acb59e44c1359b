"""Names shown as text: control and layout-changing characters made visible.

Other qless clients can name a queue, job or group with a newline, a tab, NUL or DEL, or
with characters that reorder the text around them (bidirectional overrides). Shown as they
are, such a name looks like another one, or like nothing; here each of them is replaced by
a visible stand-in, and everything else is kept. Templates escape the result as usual.
"""

from __future__ import annotations

import unicodedata

#: Control Pictures: U+2400 + code for U+0000-U+001F, U+2421 for DEL.
_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}
#: Characters that are not controls (category Cc) but still change how the text around
#: them reads: line and paragraph separators, bidirectional marks, overrides and isolates.
_LAYOUT = frozenset(
    [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)


def visible(text: str) -> str:
    """`text` with each control or layout character shown: a picture, or `<U+XXXX>`."""
    # The usual case first: every character replaced below makes isprintable() False.
    if text.isprintable():
        return text
    return "".join(_shown(char) for char in text)


def _shown(char: str) -> str:
    """One character as it is shown."""
    code = ord(char)
    if code in _PICTURES:
        return _PICTURES[code]
    if code in _LAYOUT or unicodedata.category(char) == "Cc":
        return f"<U+{code:04X}>"
    return char
