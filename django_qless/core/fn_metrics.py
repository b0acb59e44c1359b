"""Figures per job function (klass): executions, outcomes, run time and wait time.

Each `qless_worker` process counts its jobs in memory and adds them every few seconds in the
round trip that publishes its presence (`add_functions`), so a job costs Redis nothing more.
The counts go to hashes per time slot at four resolutions, each expiring by itself, so
nothing prunes them and a range is a pipeline of a fixed number of reads (no SCAN):

- per minute, kept 65 minutes (the 1 h range); per 15 minutes, kept 25 hours (the 24 h
  charts); per hour, kept 8 days (the 7 d charts, the 24 h list); per day, kept 8 days
  (the 7 d list): lists read few slots, charts many slots of one klass' fields;
- `keys.fn_slot(resolution, slot)`: each klass' counts and run-time histogram (what the
  list of functions reads whole);
- `keys.fn_extra(resolution, slot)`: each klass' wait-time histogram, and the run and wait
  histograms per queue and of every job (not per day);
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
#: Kinds kept in the lifetime totals (those Prometheus exports), as in `fn_slot` hashes.
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
    #: Whether the slot has its `fn_extra` hash too.
    extra: bool = True

    def slot_of(self, now: float) -> int:
        """The slot `now` (epoch seconds) falls in."""
        return int(now // self.seconds)


MINUTES = Resolution("m", 60, 65 * 60)
QUARTERS = Resolution("q", 900, 25 * 3600)
HOURS = Resolution("h", 3600, 8 * 86400)
DAYS = Resolution("d", 86400, 8 * 86400, extra=False)
RESOLUTIONS = (MINUTES, QUARTERS, HOURS, DAYS)


@dataclass(frozen=True)
class Span:
    """The slots a range is read as: the last `slots` of `resolution`, the current one last."""

    resolution: Resolution
    slots: int


#: The ranges pages offer, by name: as one klass' charts read them (fine slots) ...
RANGES: dict[str, Span] = {"1h": Span(MINUTES, 60), "24h": Span(QUARTERS, 96),
                           "7d": Span(HOURS, 168)}
#: ... and as the list of every klass reads them (few slots: whole hashes are read).
LIST_RANGES: dict[str, Span] = {"1h": Span(MINUTES, 60), "24h": Span(HOURS, 24),
                                "7d": Span(DAYS, 7)}
#: Kinds kept in the `fn_extra` hashes.
EXTRA_KINDS = frozenset((KLASS_WAIT, QUEUE_RUN, QUEUE_WAIT, ALL_RUN, ALL_WAIT))


def field_name(kind: str, name: str, bucket: int) -> str:
    """The hash field of one count."""
    if bucket < 0:
        return f"{kind}:{name}"
    return f"{kind}:{bucket}" if kind in (ALL_RUN, ALL_WAIT) else f"{kind}:{bucket}:{name}"


def add_functions(pipe: redis.client.Pipeline, counts: Counts, now: float) -> None:
    """Queue on `pipe` the increments of `counts` into `now`'s slots and the totals."""
    main: list[tuple[str, int]] = []
    extra: list[tuple[str, int]] = []
    for (kind, name, bucket), amount in counts.items():
        if amount:
            (extra if kind in EXTRA_KINDS else main).append(
                (field_name(kind, name, bucket), amount))
    for resolution in RESOLUTIONS:
        slot = resolution.slot_of(now)
        for key, fields in ((keys.fn_slot(resolution.name, slot), main),
                            (keys.fn_extra(resolution.name, slot), extra)):
            if not fields or (not resolution.extra and fields is extra):
                continue
            for name, amount in fields:
                pipe.hincrby(key, name, amount)
            pipe.expire(key, resolution.keep)
    for name, amount in main:  # the counts and the run-time histograms
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


def parse_slot(start: float, raw: Mapping[Any, Any], slot: Slot | None = None) -> Slot:
    """A slot hash as figures (added to `slot`, if given); fields not understood are
    skipped."""
    slot = slot if slot is not None else Slot(start)
    functions = slot.functions
    for name_raw, value in raw.items():
        try:
            amount = int(value)
        except ValueError:
            continue
        kind, _, rest = text(name_raw).partition(":")
        if kind in COUNTERS:
            figures = functions.get(rest)
            if figures is None:
                figures = functions[rest] = Figures(rest)
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

    span: Span
    #: Slot by slot, or one slot adding them all up (`read_list`).
    slots: tuple[Slot, ...]
    #: When the first slot began and the last one ends (epoch seconds).
    start: float
    end: float

    @property
    def resolution(self) -> Resolution:
        """How long each slot is."""
        return self.span.resolution

    def totals(self) -> dict[str, Figures]:
        """Each klass' figures over the whole range."""
        totals: dict[str, Figures] = {}
        for slot in self.slots:
            for klass, figures in slot.functions.items():
                total = totals.get(klass)
                if total is None:
                    total = totals[klass] = Figures(klass)
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


def slot_numbers(span: Span, now: float) -> range:
    """The slots of `span` up to `now`'s, oldest first."""
    last = span.resolution.slot_of(now)
    return range(last - span.slots + 1, last + 1)


def span_bounds(span: Span, now: float) -> tuple[range, float, float]:
    """The slot numbers of `span` up to `now`, when the first began and the last ends."""
    numbers = slot_numbers(span, now)
    seconds = span.resolution.seconds
    return numbers, float(numbers[0] * seconds), float((numbers[-1] + 1) * seconds)


def read_list(client: redis.Redis, range_name: str, now: float) -> Window:
    """Every klass' counts and run-time histogram over a range ("1h", "24h", "7d") up to
    `now`, at the range's list resolution, in one round trip (no wait times), added up
    into one slot: each field is parsed once, not once per slot."""
    span = LIST_RANGES[range_name]
    numbers, start, end = span_bounds(span, now)
    pipe = client.pipeline(transaction=False)
    for number in numbers:
        pipe.hgetall(keys.fn_slot(span.resolution.name, number))
    summed: dict[Any, int] = {}
    get = summed.get
    for raw in pipe.execute():
        for name, value in raw.items():
            try:
                summed[name] = get(name, 0) + int(value)
            except ValueError:
                continue
    return Window(span, (parse_slot(start, summed),), start, end)


def read_histograms(client: redis.Redis, range_name: str, now: float) -> Window:
    """The run and wait histograms per queue and of every job, and each klass' wait
    histogram, over a range (its chart resolution), slot by slot, in one round trip."""
    span = RANGES[range_name]
    numbers, start, end = span_bounds(span, now)
    pipe = client.pipeline(transaction=False)
    for number in numbers:
        pipe.hgetall(keys.fn_extra(span.resolution.name, number))
    seconds = span.resolution.seconds
    return Window(span, tuple(parse_slot(float(number * seconds), raw)
                              for number, raw in zip(numbers, pipe.execute(), strict=True)),
                  start, end)


def klass_fields(klass: str) -> tuple[list[str], list[str]]:
    """Every field of one klass: in the `fn_slot` hashes, and in the `fn_extra` ones."""
    main = [*(field_name(kind, klass, -1) for kind in COUNTERS),
            *(field_name(KLASS_RUN, klass, bucket) for bucket in range(ms_buckets.COUNT))]
    return main, [field_name(KLASS_WAIT, klass, bucket) for bucket in range(ms_buckets.COUNT)]


def read_function(client: redis.Redis, range_name: str, klass: str, now: float) -> Window:
    """One klass' figures over a range, slot by slot at its chart resolution, in one round
    trip (HMGET of its own fields: a slot's other klasses are not read)."""
    span = RANGES[range_name]
    numbers, start, end = span_bounds(span, now)
    main, extra = klass_fields(klass)
    name = span.resolution.name
    pipe = client.pipeline(transaction=False)
    for number in numbers:
        pipe.hmget(keys.fn_slot(name, number), main)
        pipe.hmget(keys.fn_extra(name, number), extra)
    replies = pipe.execute()
    slots = []
    for index, number in enumerate(numbers):
        raw = {field: value
               for names, values in ((main, replies[2 * index]), (extra, replies[2 * index + 1]))
               for field, value in zip(names, values, strict=True) if value is not None}
        slots.append(parse_slot(float(number * span.resolution.seconds), raw))
    return Window(span, tuple(slots), start, end)


def read_totals(client: redis.Redis) -> dict[str, Figures]:
    """Each klass' figures since the first job counted (the run-time histogram, no wait)."""
    return parse_slot(0.0, client.hgetall(keys.FN_TOTALS)).functions


def read_durations(client: redis.Redis, range_name: str, now: float, queue: str | None = None
                   ) -> tuple[list[list[int] | None], list[list[int] | None]]:
    """Run-time and wait-time histograms per slot of a range (its chart resolution), of
    every job or of one queue's, None for a slot without any; one round trip of HMGETs of
    those fields only, so the cost does not grow with the number of klasses or queues."""
    span = RANGES[range_name]
    run_kind, wait_kind, name = ((ALL_RUN, ALL_WAIT, "") if queue is None
                                 else (QUEUE_RUN, QUEUE_WAIT, queue))
    wanted = [field_name(kind, name, bucket)
              for kind in (run_kind, wait_kind) for bucket in range(ms_buckets.COUNT)]
    pipe = client.pipeline(transaction=False)
    for number in slot_numbers(span, now):
        pipe.hmget(keys.fn_extra(span.resolution.name, number), wanted)
    runs: list[list[int] | None] = []
    waits: list[list[int] | None] = []
    for values in pipe.execute():
        counts = [_count(value) for value in values]
        run, wait = counts[:ms_buckets.COUNT], counts[ms_buckets.COUNT:]
        runs.append(run if any(run) else None)
        waits.append(wait if any(wait) else None)
    return runs, waits


def _count(value: Any) -> int:
    """A histogram field's count (0 when absent or not a number)."""
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0
