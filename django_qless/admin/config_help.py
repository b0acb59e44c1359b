"""What each qless config key means and its unit, for the config page."""

from __future__ import annotations

from dataclasses import dataclass

from ..templatetags.qless_admin import duration


@dataclass(frozen=True)
class KeyHelp:
    """A key's unit (shown beside its value) and what it does."""

    unit: str
    text: str


HELP = {
    "application": KeyHelp("", "Name shown by qless's web UIs."),
    "heartbeat": KeyHelp(
        "seconds", "Lease: how long a worker holds a job without renewing it before another "
        "worker may take it (a queue's own <queue>-heartbeat wins)."),
    "grace-period": KeyHelp(
        "seconds", "After a lease expires, the worker is told it lost the job and gets this "
        "long before the job is given to another worker."),
    "stats-history": KeyHelp("days", "Days of queue statistics (counts, failures) kept."),
    "histogram-history": KeyHelp("days", "Days of wait and run time histograms kept."),
    "jobs-history": KeyHelp("seconds", "How long completed jobs are kept."),
    "jobs-history-count": KeyHelp("jobs", "Most completed jobs kept."),
    "max-job-history": KeyHelp("entries", "Most history entries kept per job."),
    "max-worker-age": KeyHelp(
        "seconds", "How long an inactive worker stays in the workers list."),
    "max-pop-retry": KeyHelp(
        "", "Throttled queues (reqless): how many times one pop looks again for jobs."),
}
QUEUE_HELP = {
    "-heartbeat": KeyHelp("seconds", "This queue's lease (see heartbeat)."),
    "-max-concurrency": KeyHelp("jobs", "Most jobs of this queue running at once (0: no limit)."),
}


def key_help(key: str) -> KeyHelp | None:
    """The help of a key, per-queue keys matched by suffix; None for an unknown key."""
    if key in HELP:
        return HELP[key]
    return next((help_ for suffix, help_ in QUEUE_HELP.items()
                 if key.endswith(suffix) and len(key) > len(suffix)), None)


@dataclass(frozen=True)
class ConfigRow:
    """One key on the page: its value, unit, meaning, and whether it is stored."""

    key: str
    value: str
    unit: str
    text: str
    #: Stored in qless's config hash (can be unset); otherwise the default is shown.
    stored: bool
    #: A duration in seconds, also as people read it ("7 d").
    readable: str


def config_rows(values: dict[str, str], stored: set[str]) -> list[ConfigRow]:
    """Rows for every value, with help where the key is known."""
    rows = []
    for key, value in values.items():
        found = key_help(key)
        unit = found.unit if found else ""
        readable = ""
        if unit == "seconds":
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            readable = duration(seconds) if seconds >= 60 else ""
        rows.append(ConfigRow(key, value, unit, found.text if found else "", key in stored,
                              readable))
    return rows
