"""Plain view models built from core records, so templates only display values."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..core import Client, HistoryEntry, Job, RecurringJob
from . import masking
from .job_actions import JOB_ACTIONS, JobAction, Selection
from .masking import Redaction
from .recurring_runs import LastRun, interval_next_runs, template_last_runs

#: Longest failure message shown in a list row (the job page shows all of it).
SUMMARY_CHARS = 160


def when(seconds: float | int | None) -> datetime | None:
    """An epoch timestamp as an aware datetime (None for 0 or nonsense)."""
    if not seconds or seconds < 0 or seconds > 253402300799:
        return None
    return datetime.fromtimestamp(float(seconds), tz=timezone.utc)


def masked(value: Any, keys: tuple[str, ...]) -> Any:
    """A copy of decoded JSON with the values of the `keys` masked (see `masking`)."""
    return masking.build(keys, ()).data(value)


def pretty_data(raw: str) -> str:
    """Job data as indented JSON with secrets masked (text that is not JSON, masked as text)."""
    rule = masking.masker()
    try:
        decoded = json.loads(raw)
    except (TypeError, ValueError):
        return rule.text(raw) if isinstance(raw, str) else raw
    return json.dumps(rule.data(decoded), indent=2, ensure_ascii=False)


def first_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The telling line of a message, shortened: the first, or a traceback's last."""
    lines = [part.strip() for part in text.splitlines() if part.strip()]
    if not lines:
        return ""
    # A Python traceback says what went wrong on its last line.
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class JobRow:
    """One job in a list."""

    job: Job
    lease_left: float | None
    summary: str
    updated: datetime | None
    #: When a scheduled job runs, and in how many seconds (None for other states).
    runs_at: datetime | None = None
    runs_in: float | None = None


def job_row(job: Job, now: float, redaction: Redaction | None = None,
            due: float | None = None) -> JobRow:
    """A list row: lease time left for running jobs, run time of scheduled ones (`due`),
    the failure's first line (masked; "" for a user who may not see job data)."""
    lease = float(job.expires) - now if job.state == "running" and job.expires else None
    shown = redaction or masking.redaction(shows_data=True)
    summary = first_line(shown.text(job.failure.message)) if job.failure else ""
    updated = when(job.history[-1].when) if job.history else None
    return JobRow(job=job, lease_left=lease, summary=summary, updated=updated,
                  runs_at=None if due is None else when(due),
                  runs_in=None if due is None else due - now)


def job_rows(jobs: Iterable[Job], now: float, redaction: Redaction | None = None) -> list[JobRow]:
    """Rows for several jobs, with the run time of the scheduled ones."""
    listed = list(jobs)
    due = run_times(listed)
    return [job_row(job, now, redaction, due.get(job.jid)) for job in listed]


def run_times(jobs: Sequence[Job]) -> dict[str, float]:
    """When each scheduled job among `jobs` runs (one round trip)."""
    scheduled = [(job.queue_name, job.jid) for job in jobs if job.state == "scheduled"]
    return jobs[0].client.due_times("scheduled", scheduled) if scheduled else {}


@dataclass(frozen=True)
class TimelineEntry:
    """One event of a job's history, ready to show."""

    when: datetime | None
    what: str
    queue: str | None
    worker: str | None
    group: str | None
    details: list[tuple[str, str]]


SHOWN_APART = frozenset({"q", "queue", "worker", "group"})


#: History fields holding a whole traceback; the timeline shows their telling line (the
#: Attempts table on the same page shows all of it).
TRACEBACK_FIELDS = frozenset({"traceback"})


def detail_text(key: str, value: Any) -> str:
    """One extra field of a history entry as text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return first_line(text) if key in TRACEBACK_FIELDS else text


def timeline(
    history: Iterable[HistoryEntry], redaction: Redaction | None = None
) -> list[TimelineEntry]:
    """The history newest first, extra fields masked and turned into text (left out for a
    user who may not see job data; the event, its time, queue, worker and group stay)."""
    shown = redaction or masking.redaction(shows_data=True)
    entries = []
    for entry in history:
        extra = shown.data(dict(entry.extra)) or {}
        details = [
            (str(k), detail_text(str(k), v)) for k, v in extra.items() if k not in SHOWN_APART
        ]
        group = entry.extra.get("group")
        entries.append(
            TimelineEntry(
                # A log() entry's event is its free-text message: masked for everyone.
                when=when(entry.when), what=shown.masker.text(entry.what), queue=entry.queue,
                worker=entry.worker, group=None if group is None else str(group), details=details,
            )
        )
    return entries[::-1]


@dataclass(frozen=True)
class Bar:
    """One bar of a histogram chart (SVG coordinates)."""

    x: float
    y: float
    height: float
    count: int
    label: str


HISTOGRAM_HEIGHT = 100.0
BAR_WIDTH = 10.0
#: Fewest buckets a chart shows (a histogram is cut after its last non-empty bucket).
MIN_BUCKETS = 15
#: Bucket index where each unit starts: s0..s59, m1..m59, h1..h23, d1..d6.
UNIT_STARTS = ((60, "1 min"), (119, "1 h"), (142, "1 d"))


def bucket_bounds(index: int) -> tuple[str, str]:
    """Start and end of histogram bucket `index`, as text."""
    for first, offset, unit in ((142, 141, "d"), (119, 118, "h"), (60, 59, "min")):
        if index >= first:
            return f"{index - offset} {unit}", f"{index - offset + 1} {unit}"
    return f"{index} s", f"{index + 1} s"


def histogram_bars(histogram: tuple[int, ...], shown: int) -> list[Bar]:
    """Bars of the first `shown` buckets, scaled to the tallest (empty ones left out)."""
    tallest = max(histogram, default=0)
    bars = []
    for index, count in enumerate(histogram[:shown]):
        if count and tallest:
            height = max(1.0, HISTOGRAM_HEIGHT * count / tallest)
            low, high = bucket_bounds(index)
            bars.append(
                Bar(
                    x=index * BAR_WIDTH, y=HISTOGRAM_HEIGHT - height, height=height,
                    count=count, label=f"{low} to {high}",
                )
            )
    return bars


@dataclass(frozen=True)
class Chart:
    """A histogram chart: its bars, unit boundaries, and the range it covers."""

    bars: list[Bar]
    ticks: list[tuple[float, str]]
    width: float
    height: float
    start: str
    end: str
    #: The tallest bar's count: the height of the chart, labelled on its y axis.
    peak: int = 0


def chart(histogram: tuple[int, ...]) -> Chart:
    """The chart of a wait or run histogram, cut after its last non-empty bucket."""
    last = max((index for index, count in enumerate(histogram) if count), default=-1)
    shown = max(1, min(len(histogram), max(last + 1, MIN_BUCKETS)))
    return Chart(
        bars=histogram_bars(histogram, shown),
        ticks=[(index * BAR_WIDTH, label) for index, label in UNIT_STARTS if index < shown],
        width=shown * BAR_WIDTH,
        height=HISTOGRAM_HEIGHT,
        start="0 s",
        end=bucket_bounds(shown - 1)[1],
        peak=max(histogram, default=0),
    )


@dataclass(frozen=True)
class RecurringRow:
    """A recurring job template with its data prepared for display."""

    job: RecurringJob
    data: str
    #: When it next spawns a job, and in how many seconds (None when unknown).
    next_run: datetime | None = None
    next_in: float | None = None
    #: Its next spawn times, the first being `next_run`.
    next_runs: tuple[datetime, ...] = ()
    #: Its last spawn (None before the first).
    last_run: LastRun | None = None


def recurring_row(job: RecurringJob, next_run: float | None = None,
                  now: float | None = None, last_run: LastRun | None = None,
                  runs: int = 1) -> RecurringRow:
    """A recurring template with masked, pretty data, its next `runs` runs and last run."""
    return RecurringRow(
        job=job, data=pretty_data(job.raw_data),
        next_run=None if next_run is None else when(next_run),
        next_in=None if next_run is None or now is None else next_run - now,
        next_runs=tuple(moment for t in interval_next_runs(next_run, job.interval, runs)
                        if (moment := when(t)) is not None),
        last_run=last_run,
    )


def recurring_rows(client: Client, jobs: Sequence[RecurringJob], runs: int = 3
                   ) -> list[RecurringRow]:
    """Rows for several templates: next runs in one round trip, last spawns in one more."""
    due = client.due_times("recur", [(job.queue_name, job.jid) for job in jobs])
    last = template_last_runs(client, jobs)
    now = client.now()
    return [recurring_row(job, due.get(job.jid), now, last.get(job.jid), runs) for job in jobs]


@dataclass(frozen=True)
class ActionBar:
    """The job page's action buttons for one job and user."""

    #: The user may run at least one of the bar's actions (on some job), so it is shown.
    shown: bool
    #: The actions offered for this job, the deleting one last.
    actions: list[JobAction]


def job_page_actions(job: Job, can: Callable[[str], bool]) -> ActionBar:
    """The actions the job page offers for a job to a user holding the permissions `can`."""
    allowed = [a for a in JOB_ACTIONS if a.on_job_page is not None and can(a.perm)]
    offered = [a for a in allowed if job.state in a.states and a.on_job_page and a.on_job_page(job)]
    # The destructive action sits apart, after the others.
    return ActionBar(bool(allowed), sorted(offered, key=lambda a: a.deletion))


@dataclass(frozen=True)
class ButtonGroup:
    """Buttons of the job lists' bulk bar sharing one input (`field`, "" for none)."""

    field: str
    actions: list[JobAction]


def list_actions(can: Callable[[str], bool]) -> list[ButtonGroup]:
    """The bulk bar above job lists: the user's actions, those sharing an input grouped."""
    groups: list[ButtonGroup] = []
    for action in JOB_ACTIONS:
        if action.list_label is None or not can(action.perm):
            continue
        if action.field and groups and groups[-1].field == action.field:
            groups[-1].actions.append(action)
        else:
            groups.append(ButtonGroup(action.field, [action]))
    return groups


def tag_actions(can: Callable[[str], bool]) -> list[JobAction]:
    """The actions on every job with a tag that the user may run."""
    return [a for a in JOB_ACTIONS if a.selection is Selection.TAG and can(a.perm)]


#: States a tracked job is counted in (plus "gone" for a jid whose job no longer exists).
TRACKED_STATES = ("running", "waiting", "scheduled", "stalled", "depends", "failed", "complete")


def tracked_counts(states: Iterable[tuple[str, str]]) -> dict[str, int]:
    """How many tracked jobs are in each state (every state listed, zero included)."""
    counted = Counter(state for _, state in states)
    return {state: counted.get(state, 0) for state in (*TRACKED_STATES, "gone")}
