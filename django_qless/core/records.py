"""Plain frozen records built from the script's JSON replies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .job import Job


def as_list(value: Any) -> list[Any]:
    """A JSON list from the script, where cjson encodes an empty list as `{}`."""
    if type(value) is list:
        return value
    if value is None or value == {}:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON list, got {value!r}")
    return value


def as_number(value: Any) -> int | float:
    """A number the script may send as a number or as a numeric string."""
    kind = type(value)
    if kind is int or kind is float:  # the common case, before the general checks
        return value  # type: ignore[no-any-return]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    number = float(value)
    return int(number) if number.is_integer() else number


@dataclass(frozen=True)
class QueueCounts:
    """How many jobs a queue holds in each state (`queues` command)."""

    name: str
    waiting: int = 0
    running: int = 0
    stalled: int = 0
    scheduled: int = 0
    depends: int = 0
    recurring: int = 0
    paused: bool = False

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueCounts:
        """Build from one counts object."""
        return cls(
            name=str(obj["name"]),
            waiting=int(obj.get("waiting", 0)),
            running=int(obj.get("running", 0)),
            stalled=int(obj.get("stalled", 0)),
            scheduled=int(obj.get("scheduled", 0)),
            depends=int(obj.get("depends", 0)),
            recurring=int(obj.get("recurring", 0)),
            paused=bool(obj.get("paused", False)),
        )


@dataclass(frozen=True)
class Timing:
    """Wait or run time statistics of one queue and day."""

    count: int
    mean: float
    std: float
    histogram: tuple[int, ...]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Timing:
        """Build from the `wait`/`run` part of a stats reply."""
        return cls(
            count=int(obj.get("count", 0)),
            mean=float(obj.get("mean", 0)),
            std=float(obj.get("std", 0)),
            histogram=tuple(int(n) for n in as_list(obj.get("histogram"))),
        )


@dataclass(frozen=True)
class Stats:
    """A queue's statistics for one day (`stats` command)."""

    retries: int
    failed: int
    failures: int
    wait: Timing
    run: Timing

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Stats:
        """Build from a stats reply."""
        return cls(
            retries=int(obj.get("retries", 0)),
            failed=int(obj.get("failed", 0)),
            failures=int(obj.get("failures", 0)),
            wait=Timing.from_json(obj.get("wait") or {}),
            run=Timing.from_json(obj.get("run") or {}),
        )


@dataclass(frozen=True)
class HistoryEntry:
    """One event of a job's history: `when` (epoch seconds), `what`, and extra fields."""

    when: int
    what: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> HistoryEntry:
        """Build from one history object (`when`, `what` and the event's own keys)."""
        extra = {k: v for k, v in obj.items() if k not in ("when", "what")}
        return cls(when=int(obj.get("when", 0)), what=str(obj.get("what", "")), extra=extra)

    @property
    def queue(self) -> str | None:
        """Queue named by a `put` event (qless writes it as `q`)."""
        value = self.extra.get("q", self.extra.get("queue"))
        return None if value is None else str(value)

    @property
    def worker(self) -> str | None:
        """Worker named by a `popped` or `failed` event."""
        value = self.extra.get("worker")
        return None if value is None else str(value)


@dataclass(frozen=True)
class Failure:
    """Why a job failed (or, while it waits for a retry, why it was retried)."""

    group: str
    message: str
    when: int
    worker: str

    @classmethod
    def from_json(cls, obj: Any) -> Failure | None:
        """Build from a job's `failure` field (`{}` means none)."""
        if not isinstance(obj, Mapping) or not obj:
            return None
        return cls(
            group=str(obj.get("group", "")),
            message=str(obj.get("message", "")),
            when=int(as_number(obj.get("when", 0))),
            worker=str(obj.get("worker", "")),
        )


@dataclass(frozen=True)
class WorkerCounts:
    """A worker known to qless and how many jobs it holds (`workers` command)."""

    name: str
    jobs: int
    stalled: int


@dataclass(frozen=True)
class WorkerJobs:
    """The jids one worker holds, split by live and expired locks."""

    jobs: tuple[str, ...]
    stalled: tuple[str, ...]


@dataclass(frozen=True)
class Page:
    """One page of a list: total size, the page's jids, and their jobs (minus any just deleted)."""

    total: int
    jids: tuple[str, ...]
    jobs: tuple[Job, ...]


class PutOutcome(NamedTuple):
    """The reply of `put.ifabsent`: the jid, and whether this call wrote the job."""

    # A named tuple: a bulk enqueue makes one per job, and a frozen dataclass's __init__
    # costs about three times as much.

    jid: str
    created: bool
    #: The state of the job that blocked the put (None when it was created).
    state: str | None

    @classmethod
    def from_reply(cls, reply: Any) -> PutOutcome:
        """Build from the script's `[jid, "put" | state]`."""
        jid, outcome = (str(part) for part in reply)
        created = outcome == "put"
        return cls(jid, created, None if created else outcome)


@dataclass(frozen=True)
class Tracked:
    """Tracked jobs, and tracked jids whose job no longer exists."""

    jobs: tuple[Job, ...]
    expired: tuple[str, ...]
