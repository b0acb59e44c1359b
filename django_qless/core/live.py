"""Live figures: jobs finished and queue depths, per minute for the last hour, per 15
minutes for the last day and per hour for the last week.

Two keys of django_qless's own per epoch minute (`int(now // 60)`), both expiring after
`KEEP` seconds, so nothing has to prune them and reading the hour is one pipeline of a
fixed size (no SCAN, nothing per job). The same two are kept per 15-minute slot (25 h)
and per hour (8 days), written in the same pipelines as the minute's (`SPANS`):

- `keys.throughput(minute)`: hash `<outcome>:<queue>` -> jobs, and `ms:<queue>` ->
  milliseconds those jobs ran. Each `qless_worker` process counts its outcomes in memory
  and adds them every few seconds (`add_throughput`), in the round trip that publishes its
  presence.
- `keys.depth(minute)`: JSON `{queue: [waiting, scheduled, running, stalled, depends]}`,
  sampled once a minute per Redis. A worker claims the minute (`claim_depth`, SET NX) in
  that same round trip and, when it won, fills the sample in; whoever reads the hour
  with the counts at hand offers its own (`read_history(offer=...)`, SET NX).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import redis

from . import keys
from .presence import text
from .records import QueueCounts

if TYPE_CHECKING:
    from .client import Client

#: Minutes the overview shows, the current one last.
MINUTES = 60
#: Seconds each minute's keys live: the hour and a margin for clocks a little apart.
KEEP = (MINUTES + 5) * 60
#: Outcomes counted: a job completed, failed for good, or failed and put back for a retry.
OUTCOMES = ("completed", "failed", "retried")
#: The field prefix of the milliseconds the jobs finished in a minute ran, by queue.
RUN_MS = "ms"
#: The counts of a depth sample, in the order each queue's list holds them.
DEPTH_STATES = ("waiting", "scheduled", "running", "stalled", "depends")
#: What a claimed depth sample holds until its claimer fills it in.
CLAIMED = ""


@dataclass(frozen=True)
class Span:
    """A time range the charts show: `slots` slots of `seconds` each, the current one last."""

    name: str
    seconds: int
    slots: int
    #: How long each slot's keys live (the range and a margin); the slot's name in its keys.
    keep: int
    width: str
    #: The range in words, and what one slot is, for labels ("last hour", "minute").
    words: str
    slot_words: str

    def slot_of(self, now: float) -> int:
        """The slot `now` (seconds since the epoch) falls in."""
        return int(now // self.seconds)

    def throughput_key(self, slot: int) -> str:
        """The throughput hash of one slot."""
        return keys.throughput(slot) if self.seconds == 60 else keys.throughput_slot(
            self.width, slot)

    def depth_key(self, slot: int) -> str:
        """The depth sample of one slot."""
        return keys.depth(slot) if self.seconds == 60 else keys.depth_slot(self.width, slot)


#: The ranges, by the name `?range=` takes: the hour per minute, the day per 15 minutes
#: (kept 25 h), the week per hour (kept 8 days).
SPANS: dict[str, Span] = {
    "1h": Span("1h", 60, MINUTES, KEEP, "1m", "last hour", "minute"),
    "24h": Span("24h", 900, 96, 25 * 3600, "15m", "last 24 hours", "15 minutes"),
    "7d": Span("7d", 3600, 168, 8 * 86400, "1h", "last 7 days", "hour"),
}
#: The coarser spans, written alongside each minute.
COARSE = tuple(span for span in SPANS.values() if span.seconds != 60)


def minute_of(now: float) -> int:
    """The epoch minute `now` (seconds since the epoch) falls in."""
    return int(now // 60)


def add_throughput(pipe: redis.client.Pipeline, counts: Mapping[tuple[str, str], int],
                   now: float) -> None:
    """Queue on `pipe` the increments of `counts` ((queue, outcome) -> jobs, (queue, `RUN_MS`)
    -> milliseconds) for `now`'s minute."""
    fields = {f"{outcome}:{queue}": jobs for (queue, outcome), jobs in counts.items() if jobs}
    if not fields:
        return
    # The minute and its coarser slots, in the same pipeline: no extra round trip.
    for span in SPANS.values():
        key = span.throughput_key(span.slot_of(now))
        for name, jobs in fields.items():
            pipe.hincrby(key, name, jobs)
        pipe.expire(key, span.keep)


def claim_depth(pipe: redis.client.Pipeline, now: float) -> None:
    """Queue on `pipe` the claim of `now`'s depth sample; its reply is true for the winner."""
    pipe.set(keys.depth(minute_of(now)), CLAIMED, nx=True, ex=KEEP)


def fill_depth(client: Client, counts: Iterable[QueueCounts], now: float) -> None:
    """Write the depth sample of `now`'s minute, claimed before (its expiry is kept), and
    of its coarser slots unless sampled already (one round trip)."""
    sample = depth_json(counts)
    pipe = client.redis.pipeline(transaction=False)
    pipe.set(keys.depth(minute_of(now)), sample, xx=True, keepttl=True)
    offer_coarse(pipe, sample, now)
    pipe.execute()


def offer_coarse(pipe: redis.client.Pipeline, sample: str, now: float) -> None:
    """Queue on `pipe` `sample` as the depth of `now`'s coarser slots, where none is yet:
    each keeps the first sample taken in it."""
    for span in COARSE:
        pipe.set(span.depth_key(span.slot_of(now)), sample, nx=True, ex=span.keep)


def depth_json(counts: Iterable[QueueCounts]) -> str:
    """A depth sample: each queue's counts in `DEPTH_STATES` order."""
    return json.dumps({queue.name: [getattr(queue, state) for state in DEPTH_STATES]
                       for queue in counts}, separators=(",", ":"))


class Depth(NamedTuple):
    """One queue's counts in a sample (a tuple in `DEPTH_STATES` order)."""

    waiting: int = 0
    scheduled: int = 0
    running: int = 0
    stalled: int = 0
    depends: int = 0


@dataclass(frozen=True)
class Minute:
    """One minute: jobs finished there by queue and outcome, and its depth sample if taken."""

    #: The slot's number: its start in epoch seconds divided by `seconds`.
    minute: int
    finished: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    depths: Mapping[str, Depth] | None = None
    #: Milliseconds the jobs finished in this minute ran, by queue.
    run_ms: Mapping[str, int] = field(default_factory=dict)
    #: The slot's length: 60 for a minute, more in the coarser spans.
    seconds: int = 60

    @property
    def start(self) -> float:
        """When the slot began (seconds since the epoch)."""
        return self.minute * float(self.seconds)

    def jobs(self, outcome: str, queue: str | None = None) -> int:
        """Jobs that ended with `outcome` in this minute, in one queue or all."""
        if queue is not None:
            return self.finished.get(queue, {}).get(outcome, 0)
        return self.finished_in_all.get(outcome, 0)

    def ran_ms(self, queue: str | None = None) -> int:
        """Milliseconds the jobs finished in this minute ran, in one queue or all."""
        if queue is not None:
            return self.run_ms.get(queue, 0)
        return sum(self.run_ms.values())

    def depth(self, state: str, queue: str | None = None) -> int | None:
        """Jobs in `state` when sampled, in one queue or all; None without a sample."""
        if self.depths is None:
            return None
        if queue is not None:
            found = self.depths.get(queue)
            return found[DEPTH_STATES.index(state)] if found is not None else 0
        return self.depth_in_all[DEPTH_STATES.index(state)]

    @cached_property
    def finished_in_all(self) -> dict[str, int]:
        """Jobs finished in every queue, by outcome (summed once, read many times)."""
        totals: dict[str, int] = {}
        for by_outcome in self.finished.values():
            for outcome, jobs in by_outcome.items():
                totals[outcome] = totals.get(outcome, 0) + jobs
        return totals

    @cached_property
    def depth_in_all(self) -> Depth:
        """Jobs in every queue when sampled, by state (no sample: zeros)."""
        columns = zip(*(self.depths or {}).values(), strict=True)
        return Depth(*(sum(column) for column in columns))


@dataclass(frozen=True)
class History:
    """The span's slots (the last `MINUTES` minutes by default), oldest first; the last one
    is still going on."""

    minutes: tuple[Minute, ...]
    span: Span = SPANS["1h"]

    def queues(self) -> list[str]:
        """Every queue that finished a job or was sampled in the hour, by name."""
        names: set[str] = set()
        for minute in self.minutes:
            names.update(minute.finished)
            names.update(minute.depths or ())
        return sorted(names)


def read_history(client: Client, now: float,
                 offer: Iterable[QueueCounts] | None = None, span: str = "1h") -> History:
    """The `span` (a `SPANS` name: the hour by default) up to `now`'s slot, in one round trip.

    With `offer` (every queue's counts, just read), they become the current minute's depth
    sample unless one was taken already (and that of its coarser slots unless they have
    one): a page watched by someone keeps the depth history going even when no
    `qless_worker` process runs.
    """
    shown = SPANS[span]
    last = shown.slot_of(now)
    numbers = range(last - shown.slots + 1, last + 1)
    pipe = client.redis.pipeline(transaction=False)
    sample = None if offer is None else depth_json(offer)
    if sample is not None:
        pipe.set(keys.depth(minute_of(now)), sample, nx=True, ex=KEEP)
        offer_coarse(pipe, sample, now)
    for number in numbers:
        pipe.hgetall(shown.throughput_key(number))
    for number in numbers:
        pipe.get(shown.depth_key(number))
    replies = pipe.execute()
    if sample is not None:
        replies = replies[1 + len(COARSE):]
    hashes, samples = replies[:shown.slots], replies[shown.slots:]
    if (sample is not None and shown.seconds == 60 and samples[-1] is not None
            and text(samples[-1]) == CLAIMED):
        # Claimed but not filled in (its claimer may have died): the offer fills it.
        client.redis.set(keys.depth(last), sample, xx=True, keepttl=True)
        samples[-1] = sample
    minutes = []
    for number, raw, sample in zip(numbers, hashes, samples, strict=True):
        finished, run_ms = parse_throughput(raw)
        minutes.append(Minute(number, finished, parse_depth(sample), run_ms, shown.seconds))
    return History(tuple(minutes), shown)


@functools.lru_cache(maxsize=8192)
def field_of(name: str | bytes) -> tuple[str, str]:
    """A throughput field's outcome and queue (remembered: a week of slots repeats the same
    few hundred fields)."""
    outcome, _, queue = (name.decode() if isinstance(name, bytes) else name).partition(":")
    return outcome, queue


def parse_throughput(raw: Mapping[Any, Any]
                     ) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """A throughput hash as queue -> outcome -> jobs, and queue -> milliseconds run; fields
    not understood are skipped."""
    finished: dict[str, dict[str, int]] = {}
    run_ms: dict[str, int] = {}
    for name, value in raw.items():
        outcome, queue = field_of(name)
        if not queue:
            continue
        try:
            number = int(value)  # int() takes bytes and str alike
        except ValueError:
            continue
        if outcome == RUN_MS:
            run_ms[queue] = number
        elif outcome in OUTCOMES:
            by_outcome = finished.get(queue)
            if by_outcome is None:
                by_outcome = finished[queue] = {}
            by_outcome[outcome] = number
    return finished, run_ms


def parse_depth(sample: Any) -> dict[str, Depth] | None:
    """A depth sample as queue -> counts; None when not taken, only claimed, or malformed."""
    if sample is None or text(sample) == CLAIMED:
        return None
    try:
        decoded = json.loads(text(sample))
        return {str(queue): Depth._make(map(int, counts[:len(DEPTH_STATES)]))
                for queue, counts in decoded.items()}
    except (ValueError, TypeError, AttributeError):
        return None
