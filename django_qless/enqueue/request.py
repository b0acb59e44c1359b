"""`Enqueue`: the submissions of one enqueue, and what their caller asks of the path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.submission import Submission

#: Told of the jobs a put created (in order) and of that put's clock.
Announce = Callable[[Sequence[Submission], float], None]
#: Runs one submission inline, in this process (immediate mode).
Inline = Callable[[Submission], None]


@dataclass(frozen=True)
class Enqueue:
    """Checked submissions bound for one connection, and how they are to be sent."""

    #: The `QLESS` connection alias every submission goes to.
    connection: str
    submissions: Sequence[Submission]
    #: Called once the jobs are in Redis (never for a unique job that existed already).
    announce: Announce
    #: Put after the transaction commits when inside one (None: `QLESS["ENQUEUE_ON_COMMIT"]`).
    on_commit: bool | None = None
    #: The database whose transaction decides (None: the default one).
    db_alias: str | None = None
    #: Immediate mode's runner; None when `QLESS["IMMEDIATE"]` does not apply (Django tasks).
    inline: Inline | None = None
    #: One bulk enqueue: its puts pipelined, its outbox rows inserted in one statement.
    many: bool = False
    #: The Tasks backend alias of Django tasks ("" for `@qless_job`), kept in outbox rows.
    task_backend: str = ""
