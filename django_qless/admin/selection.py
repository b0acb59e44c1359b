"""What a search or a list selects: a `JobFilter`, walked in bounded `Step`s by a `Selection`.

The search page (`search/`) walks a filter a step at a time and pages its matches; the
bulk actions ("select all N matching") walk the same filter in chunks and act on each.
Both resume from a `cursor`: an opaque text the walker itself wrote, so a step never
needs a call longer than its budget, and a closed page can carry on where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Protocol
from urllib.parse import urlencode

#: The cursor of a walk's first step.
START = ""
#: Job states a filter can name (a queue's sets, plus failed and complete).
STATES = ("waiting", "running", "scheduled", "stalled", "depends", "failed", "complete")


@dataclass(frozen=True)
class JobFilter:
    """The criteria of one search; an empty field does not filter."""

    queue: str = ""
    state: str = ""
    klass: str = ""
    tag: str = ""
    jid_prefix: str = ""
    worker: str = ""
    #: A substring of the job's data (its JSON text).
    data_contains: str = ""
    #: Failure group (state "failed" only).
    group: str = ""
    #: Epoch seconds bounds on the job's time in its current state (inclusive), or None.
    since: float | None = None
    until: float | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> JobFilter:
        """The filter a page's query string names; unknown keys are ignored."""
        text = {field.name: str(query.get(field.name, "")).strip() for field in fields(cls)}
        bounds = {name: _seconds(text.pop(name)) for name in ("since", "until")}
        return cls(**text, **bounds)  # type: ignore[arg-type]

    def query(self) -> dict[str, str]:
        """The filter as query-string pairs (empty fields left out)."""
        pairs: dict[str, str] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if value not in ("", None):
                pairs[field.name] = _text(value)
        return pairs

    def query_string(self) -> str:
        """`query()` URL-encoded, for links and hidden form fields."""
        return urlencode(self.query())

    def is_empty(self) -> bool:
        """Whether no criterion is set."""
        return not self.query()

    def describe(self) -> str:
        """The criteria in words, for a confirmation ("state failed, klass app.send")."""
        return ", ".join(f"{name.replace('_', ' ')} {value}"
                         for name, value in self.query().items()) or "every job"


def _seconds(raw: str) -> float | None:
    """A bound as epoch seconds, or None when blank or not a number."""
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


def _text(value: object) -> str:
    """A field's value as query text (whole seconds without ".0")."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Step:
    """What one bounded step of a walk found."""

    #: Matching jids found in this step, in the walk's order.
    jids: tuple[str, ...]
    #: Where the next step starts; None when the walk has looked at every candidate.
    cursor: str | None
    #: Candidates looked at so far, this step included.
    looked: int
    #: Candidates the walk will look at in all, when known.
    total: int | None

    @property
    def done(self) -> bool:
        """Whether nothing is left to look at."""
        return self.cursor is None


class Selection(Protocol):
    """A walk over the jobs a filter matches, one bounded step at a time."""

    filter: JobFilter

    def step(self, cursor: str, limit: int) -> Step:
        """Look at the candidates after `cursor` (`START` first); at most `limit` matches."""
        ...
