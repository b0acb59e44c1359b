"""Partner feeds of new subscribers (CSV text shipped with the example)."""

from __future__ import annotations

import csv
import io

FEEDS = {
    "spring-fair": (
        "email,name\n"
        "marta@fair.example.org,Marta Ruiz\n"
        "kenji@fair.example.org,Kenji Sato\n"
        "ola@fair.example.org,Ola Nordmann\n"
    ),
    # An old CRM export: semicolons and a third column nobody asked for.
    "legacy-crm": (
        "EMAIL;FULL NAME;SCORE\n"
        "ann@crm.example.net;Ann Lee;12\n"
    ),
}


class FeedFormatError(Exception):
    """A feed is not `email,name` CSV."""


def parse_feed(feed: str) -> list[tuple[str, str]]:
    """The (email, name) rows of a feed; raises `FeedFormatError` for anything else."""
    try:
        text = FEEDS[feed]
    except KeyError:
        raise FeedFormatError(f"unknown feed {feed!r}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    if header != ["email", "name"]:
        raise FeedFormatError(f"feed {feed!r}: expected header 'email,name', got {header!r}")
    rows = []
    for number, row in enumerate(reader, start=2):
        if len(row) != 2 or "@" not in row[0]:
            raise FeedFormatError(f"feed {feed!r} line {number}: expected email,name, got {row!r}")
        rows.append((row[0].strip().lower(), row[1].strip()))
    return rows
