"""Figures per job function (klass): executions, outcomes, run time and wait time.

Each `qless_worker` process counts its jobs in memory and adds them every few seconds in the
round trip that publishes its presence (`add_functions`), so a job costs Redis nothing more.
The counts go to one hash per time slot at three resolutions, each expiring by itself, so
nothing prunes them and a range is a pipeline of a fixed number of reads (no SCAN):

- `keys.fn_slot("m", minute)`: per minute, kept 65 minutes (the 1 h range);
- `keys.fn_slot("q", quarter)`: per 15 minutes, kept 25 hours (the 24 h range);
- `keys.fn_slot("h", hour)`: per hour, kept 8 days (the 7 d range);
- `keys.FN_TOTALS`: the counts and run-time histogram per klass since the first job,
  never expiring (Prometheus counters must not go down).

Fields (the name last, as klasses and queues may hold any character): `n:<klass>`
executions, `c:`, `f:`, `r:` completed, failed for good, retried, `ms:` milliseconds run;
`rh:<bucket>:<klass>` and `wh:<bucket>:<klass>` run-time and wait-time histograms in
`ms_buckets`; `qr:<bucket>:<queue>` and `qw:<bucket>:<queue>` the same per queue;
`ar:<bucket>` and `aw:<bucket>` for every job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from . import keys, ms_buckets

#: Counter kinds per klass, in field order: executions, completed, failed, retried, ms run.
EXECUTIONS, COMPLETED, FAILED, RETRIED, RUN_MS = "n", "c", "f", "r", "ms"
COUNTERS = (EXECUTIONS, COMPLETED, FAILED, RETRIED, RUN_MS)
#: Histogram kinds: per klass, per queue, every job; run time then wait time.
KLASS_RUN, KLASS_WAIT, QUEUE_RUN, QUEUE_WAIT, ALL_RUN, ALL_WAIT = (
    "rh", "wh", "qr", "qw", "ar", "aw")
#: The counter each counted outcome adds to.
OUTCOME_KINDS = {"completed": COMPLETED, "failed": FAILED, "retried": RETRIED}
#: Kinds kept in the lifetime totals (those Prometheus exports).
TOTAL_KINDS = frozenset((*COUNTERS, KLASS_RUN))
#: What a worker counts: (kind, name, bucket) -> increment; bucket -1 for counters, name
#: "" for the every-job histograms.
Counts = Mapping[tuple[str, str, int], int]


@dataclass(frozen=True)
class Resolution:
    """One way of slicing time: slots of `seconds`, each kept `keep` seconds."""

    name: str
    seconds: int
    keep: int
    #: Slots the range drawn at this resolution spans.
    slots: int

    def slot_of(self, now: float) -> int:
        """The slot `now` (epoch seconds) falls in."""
        return int(now // self.seconds)


MINUTES = Resolution("m", 60, 65 * 60, 60)
QUARTERS = Resolution("q", 900, 25 * 3600, 96)
HOURS = Resolution("h", 3600, 8 * 86400, 168)
RESOLUTIONS = (MINUTES, QUARTERS, HOURS)
#: The ranges pages offer, by name, and the resolution each is read at.
RANGES: dict[str, Resolution] = {"1h": MINUTES, "24h": QUARTERS, "7d": HOURS}


def field_name(kind: str, name: str, bucket: int) -> str:
    """The hash field of one count."""
    if bucket < 0:
        return f"{kind}:{name}"
    return f"{kind}:{bucket}" if kind in (ALL_RUN, ALL_WAIT) else f"{kind}:{bucket}:{name}"


def add_functions(pipe: redis.client.Pipeline, counts: Counts, now: float) -> None:
    """Queue on `pipe` the increments of `counts` into `now`'s slots and the totals."""
    fields = [(field_name(kind, name, bucket), kind, amount)
              for (kind, name, bucket), amount in counts.items() if amount]
    if not fields:
        return
    for resolution in RESOLUTIONS:
        key = keys.fn_slot(resolution.name, resolution.slot_of(now))
        for name, _, amount in fields:
            pipe.hincrby(key, name, amount)
        pipe.expire(key, resolution.keep)
    for name, kind, amount in fields:
        if kind in TOTAL_KINDS:
            pipe.hincrby(keys.FN_TOTALS, name, amount)


def empty_histogram() -> list[int]:
    """A histogram with no sample."""
    return [0] * ms_buckets.COUNT


@dataclass
class Figures:
    """One klass' figures over a slot or a range."""

    klass: str
    executions: int = 0
    completed: int = 0
    failures: int = 0
    retries: int = 0
    run_ms: int = 0
    run: list[int] = field(default_factory=empty_histogram)
    wait: list[int] = field(default_factory=empty_histogram)

    def add(self, other: Figures) -> None:
        """Add another slot's figures of the same klass."""
        self.executions += other.executions
        self.completed += other.completed
        self.failures += other.failures
        self.retries += other.retries
        self.run_ms += other.run_ms
        add_into(self.run, other.run)
        add_into(self.wait, other.wait)

    @property
    def failure_rate(self) -> float | None:
        """Percent of executions that failed (for good or retried); None without any."""
        if not self.executions:
            return None
        return round(100 * (self.failures + self.retries) / self.executions, 1)

    @property
    def average_ms(self) -> float | None:
        """Milliseconds an execution ran on average; None without any."""
        return self.run_ms / self.executions if self.executions else None

    def run_percentile(self, fraction: float) -> float | None:
        """The run time (ms) below which `fraction` of the executions fall."""
        return ms_buckets.percentile(self.run, fraction)

    def wait_percentile(self, fraction: float) -> float | None:
        """The wait (ms) below which `fraction` of the counted waits fall."""
        return ms_buckets.percentile(self.wait, fraction)

    @property
    def p50(self) -> float | None:
        """Median run time (ms)."""
        return self.run_percentile(0.5)

    @property
    def p95(self) -> float | None:
        """95th percentile of run time (ms)."""
        return self.run_percentile(0.95)

    @property
    def p99(self) -> float | None:
        """99th percentile of run time (ms)."""
        return self.run_percentile(0.99)


def add_into(total: list[int], more: Sequence[int]) -> None:
    """Add histogram `more` into `total`, bucket by bucket."""
    for index, count in enumerate(more):
        if count:
            total[index] += count


@dataclass
class Slot:
    """One time slot: figures by klass, and run/wait histograms by queue and for all jobs."""

    start: float
    functions: dict[str, Figures] = field(default_factory=dict)
    queue_run: dict[str, list[int]] = field(default_factory=dict)
    queue_wait: dict[str, list[int]] = field(default_factory=dict)
    all_run: list[int] = field(default_factory=empty_histogram)
    all_wait: list[int] = field(default_factory=empty_histogram)

    def of(self, klass: str) -> Figures:
        """The klass' figures in this slot (empty when it ran nothing here)."""
        return self.functions.get(klass) or Figures(klass)


def text(value: Any) -> str:
    """A field name as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_slot(start: float, raw: Mapping[Any, Any]) -> Slot:
    """A slot hash as figures; fields not understood are skipped."""
    slot = Slot(start)
    for name_raw, value in raw.items():
        try:
            amount = int(value)
        except ValueError:
            continue
        kind, _, rest = text(name_raw).partition(":")
        if kind in COUNTERS:
            figures = slot.functions.get(rest) or slot.functions.setdefault(rest, Figures(rest))
            add_counter(figures, kind, amount)
            continue
        bucket_text, _, name = rest.partition(":")
        try:
            bucket = int(bucket_text)
        except ValueError:
            continue
        if not 0 <= bucket < ms_buckets.COUNT:
            continue
        histogram = histogram_of(slot, kind, name)
        if histogram is not None:
            histogram[bucket] += amount
    return slot


def add_counter(figures: Figures, kind: str, amount: int) -> None:
    """Add one counter field to a klass' figures."""
    if kind == EXECUTIONS:
        figures.executions += amount
    elif kind == COMPLETED:
        figures.completed += amount
    elif kind == FAILED:
        figures.failures += amount
    elif kind == RETRIED:
        figures.retries += amount
    else:
        figures.run_ms += amount


def histogram_of(slot: Slot, kind: str, name: str) -> list[int] | None:
    """The histogram a field of `kind` adds to (None for a kind not known)."""
    if kind in (KLASS_RUN, KLASS_WAIT):
        figures = slot.functions.get(name) or slot.functions.setdefault(name, Figures(name))
        return figures.run if kind == KLASS_RUN else figures.wait
    if kind in (QUEUE_RUN, QUEUE_WAIT):
        by_queue = slot.queue_run if kind == QUEUE_RUN else slot.queue_wait
        return by_queue.get(name) or by_queue.setdefault(name, empty_histogram())
    if kind == ALL_RUN:
        return slot.all_run
    if kind == ALL_WAIT:
        return slot.all_wait
    return None


@dataclass(frozen=True)
class Window:
    """The slots of one range, oldest first; the last one is still going on."""

    resolution: Resolution
    slots: tuple[Slot, ...]

    def totals(self) -> dict[str, Figures]:
        """Each klass' figures over the whole range."""
        totals: dict[str, Figures] = {}
        for slot in self.slots:
            for klass, figures in slot.functions.items():
                total = totals.get(klass) or totals.setdefault(klass, Figures(klass))
                total.add(figures)
        return totals

    def top(self, by: str, count: int = 10) -> list[Figures]:
        """The `count` klasses with the most `by` ("run_ms", "failures", "executions")."""
        ranked = sorted(self.totals().values(), key=lambda f: (-getattr(f, by), f.klass))
        return [figures for figures in ranked[:count] if getattr(figures, by)]

    def function(self, klass: str) -> list[Figures]:
        """One klass' figures, slot by slot."""
        return [slot.of(klass) for slot in self.slots]

    def overall(self) -> tuple[list[int], list[int]]:
        """Run-time and wait-time histograms of every job in the range."""
        run, wait = empty_histogram(), empty_histogram()
        for slot in self.slots:
            add_into(run, slot.all_run)
            add_into(wait, slot.all_wait)
        return run, wait

    def queue(self, name: str) -> tuple[list[int], list[int]]:
        """Run-time and wait-time histograms of one queue's jobs in the range."""
        run, wait = empty_histogram(), empty_histogram()
        for slot in self.slots:
            add_into(run, slot.queue_run.get(name, ()))
            add_into(wait, slot.queue_wait.get(name, ()))
        return run, wait


def slot_numbers(resolution: Resolution, now: float) -> range:
    """The slots of `resolution`'s range up to `now`'s, oldest first."""
    last = resolution.slot_of(now)
    return range(last - resolution.slots + 1, last + 1)


def read_window(client: redis.Redis, range_name: str, now: float) -> Window:
    """Every klass' figures over a range ("1h", "24h", "7d") up to `now`, in one round trip."""
    resolution = RANGES[range_name]
    numbers = slot_numbers(resolution, now)
    pipe = client.pipeline(transaction=False)
    for number in numbers:
        pipe.hgetall(keys.fn_slot(resolution.name, number))
    hashes = pipe.execute()
    return Window(resolution, tuple(parse_slot(float(number * resolution.seconds), raw)
                                    for number, raw in zip(numbers, hashes, strict=True)))


def klass_fields(klass: str) -> list[str]:
    """Every field one klass' figures may have."""
    return [*(field_name(kind, klass, -1) for kind in COUNTERS),
            *(field_name(kind, klass, bucket) for kind in (KLASS_RUN, KLASS_WAIT)
              for bucket in range(ms_buckets.COUNT))]


def read_function(client: redis.Redis, range_name: str, klass: str, now: float) -> Window:
    """One klass' figures over a range, slot by slot, in one round trip (HMGET of its own
    fields: a slot's other klasses are not read)."""
    resolution = RANGES[range_name]
    numbers = slot_numbers(resolution, now)
    names = klass_fields(klass)
    pipe = client.pipeline(transaction=False)
    for number in numbers:
        pipe.hmget(keys.fn_slot(resolution.name, number), names)
    replies = pipe.execute()
    slots = []
    for number, values in zip(numbers, replies, strict=True):
        raw = {name: value for name, value in zip(names, values, strict=True)
               if value is not None}
        slots.append(parse_slot(float(number * resolution.seconds), raw))
    return Window(resolution, tuple(slots))


def read_totals(client: redis.Redis) -> dict[str, Figures]:
    """Each klass' figures since the first job counted (the run-time histogram, no wait)."""
    return parse_slot(0.0, client.hgetall(keys.FN_TOTALS)).functions

