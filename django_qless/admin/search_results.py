"""One page of search results: steps of a `Selection` until a page is full or time is up."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .selection import Selection

#: Matches a page shows.
PAGE_SIZE = 25
#: Steps one request takes at most, and the time after which it starts no other.
MAX_STEPS = 20
SECONDS = 0.3


@dataclass(frozen=True)
class ResultPage:
    """The matches one request found, and where the walk stands."""

    jids: tuple[str, ...]
    #: The cursor of the next page; None when every candidate has been looked at.
    cursor: str | None
    looked: int
    total: int | None
    #: Steps taken; a page that ran out of them or of time says so.
    steps: int

    @property
    def done(self) -> bool:
        """Whether the walk has looked at every candidate."""
        return self.cursor is None


def result_page(
    selection: Selection, cursor: str, *, size: int = PAGE_SIZE, max_steps: int | None = None,
    seconds: float | None = None,
) -> ResultPage:
    """Steps from `cursor` until `size` matches, the end, `max_steps` or `seconds`."""
    max_steps = MAX_STEPS if max_steps is None else max_steps
    deadline = time.monotonic() + (SECONDS if seconds is None else seconds)
    found: list[str] = []
    looked, total, steps = 0, None, 0
    at: str | None = cursor
    while at is not None and len(found) < size and steps < max_steps:
        step = selection.step(at, size - len(found))
        steps += 1
        # A job that moved to a set walked later shows once on a page.
        found += [jid for jid in step.jids if jid not in found]
        at, looked, total = step.cursor, step.looked, step.total
        if time.monotonic() >= deadline:
            break
    return ResultPage(jids=tuple(found), cursor=at, looked=looked, total=total, steps=steps)
