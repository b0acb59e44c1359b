"""The worker options, each declared once: name, kind, default, settings key, flags, help.

`WORKER_OPTIONS` is read by three sides: the `QLESS['WORKER']` reader (`conf.reader`), the
argument parser of `manage.py qless_worker`, and the defaults of `WorkerSettings` and
`WorkerOptions` (through `worker_default`). A kind knows both forms of its value: the text
of a command-line argument and the Python value of a setting.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core import validation

if TYPE_CHECKING:
    from .reader import Reader

Strategy = Literal["ordered", "round-robin", "shuffle"]
STRATEGIES: tuple[Strategy, ...] = ("ordered", "round-robin", "shuffle")
Isolation = Literal["none", "process"]
ISOLATIONS: tuple[Isolation, ...] = ("none", "process")


def integer_from(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer >= `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


positive_int = integer_from(1)
non_negative_int = integer_from(0)


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def queue(text: str) -> str:
    """argparse type: a valid queue name (as `QLESS['WORKER']['QUEUES']` requires)."""
    try:
        return validation.queue_name(text)
    except ValueError as exc:
        # argparse shows its own "invalid <type> value" for a ValueError: keep ours.
        raise argparse.ArgumentTypeError(str(exc)) from None


def queue_list(text: str) -> list[str]:
    """argparse type: comma-separated valid queue names."""
    names = [queue(name.strip()) for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected one or more queue names")
    return names


class Kind:
    """The type of an option's value, on the command line and (where it has a key) in settings."""

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """`add_argument` keywords besides flags, dest, help and metavar."""
        # None lets the setting through: from_settings only applies given (non-None) values.
        return {"default": None if option.key else option.default}

    def add_to(self, parser: argparse.ArgumentParser, option: WorkerOption) -> None:
        """Declare the option on `parser`, stored under its attribute name."""
        shown: dict[str, Any] = {"metavar": option.metavar} if option.metavar else {}
        parser.add_argument(*option.flags, dest=option.name, help=option.help, **shown,
                            **self.argparse_options(option))

    def given(self, parsed: Mapping[str, Any], option: WorkerOption) -> Any:
        """The value the command line gave (None: not given, the setting applies)."""
        return parsed[option.name]

    def read(
        self, reader: Reader, raw: Mapping[str, Any], key: str, path: str, default: Any
    ) -> Any:
        """The value of `raw[key]`, problems recorded on `reader`; only kinds of settings."""
        raise TypeError(f"{type(self).__name__} options have no QLESS['WORKER'] key")


@dataclass(frozen=True)
class Integer(Kind):
    """An integer >= `minimum`."""

    minimum: int

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """Parsed with the same lower bound as the setting."""
        return {**super().argparse_options(option), "type": integer_from(self.minimum)}

    def read(
        self, reader: Reader, raw: Mapping[str, Any], key: str, path: str, default: Any
    ) -> int | None:
        """An int >= `minimum` (None only where None is the default)."""
        return reader.integer(raw, key, path, default, minimum=self.minimum)


@dataclass(frozen=True)
class Seconds(Kind):
    """A finite number of seconds, > 0 when `above_zero`, else >= 0."""

    above_zero: bool

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """Parsed with the same lower bound as the setting."""
        parse = positive_seconds if self.above_zero else seconds
        return {**super().argparse_options(option), "type": parse}

    def read(
        self, reader: Reader, raw: Mapping[str, Any], key: str, path: str, default: Any
    ) -> float | None:
        """A float in range (None only where None is the default)."""
        return reader.number(raw, key, path, default, minimum=0, exclusive=self.above_zero)


@dataclass(frozen=True)
class Choice(Kind):
    """One of a few fixed words."""

    choices: tuple[str, ...]

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """argparse refuses any other word."""
        return {**super().argparse_options(option), "choices": self.choices}

    def read(
        self, reader: Reader, raw: Mapping[str, Any], key: str, path: str, default: Any
    ) -> str:
        """One of `choices`."""
        return reader.choice(raw, key, path, default, self.choices)


@dataclass(frozen=True)
class QueueList(Kind):
    """Queue names: positional arguments, then each repeatable comma-separated flag value."""

    #: Help of the positional queue names (the flag's help is the option's).
    positional_help: str
    positional_dest = "queue_names"

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """Each use of the flag appends its list."""
        return {"type": queue_list, "action": "append", "default": []}

    def add_to(self, parser: argparse.ArgumentParser, option: WorkerOption) -> None:
        """The positional names as well as the flag."""
        parser.add_argument(self.positional_dest, nargs="*", type=queue, metavar="queue",
                            help=self.positional_help)
        super().add_to(parser, option)

    def given(self, parsed: Mapping[str, Any], option: WorkerOption) -> tuple[str, ...] | None:
        """Positional names first, then the flags' lists in order; None when there are none."""
        listed = (name for group in parsed[option.name] for name in group)
        return (*parsed[self.positional_dest], *listed) or None

    def read(
        self, reader: Reader, raw: Mapping[str, Any], key: str, path: str, default: Any
    ) -> tuple[str, ...]:
        """A list of valid queue names, without repeats (empty when absent)."""
        return reader.queue_names(raw, key, path)


@dataclass(frozen=True)
class Flag(Kind):
    """An on/off switch, off unless given."""

    def argparse_options(self, option: WorkerOption) -> dict[str, Any]:
        """Present means on."""
        return {**super().argparse_options(option), "action": "store_true"}


@dataclass(frozen=True)
class Text(Kind):
    """A free string."""


@dataclass(frozen=True)
class WorkerOption:
    """One worker option; `key` is its `QLESS['WORKER']` key, None on the command line only."""

    name: str
    kind: Kind
    default: Any
    key: str | None
    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    #: False for options of the command itself rather than fields of `WorkerOptions`.
    worker: bool = True


WORKER_OPTIONS: tuple[WorkerOption, ...] = (
    WorkerOption(
        "queues", QueueList("queues to work (default: QLESS['WORKER']['QUEUES'])"), (),
        "QUEUES", ("--queues",), "comma-separated queues, added after the positional ones",
    ),
    WorkerOption("strategy", Choice(STRATEGIES), "ordered", "STRATEGY", ("--strategy",),
                 "order in which queues are tried for each job"),
    WorkerOption("processes", Integer(1), 1, "PROCESSES", ("--processes",),
                 "number of worker processes (each runs up to --concurrency jobs at once)"),
    WorkerOption("concurrency", Integer(1), 1, "CONCURRENCY", ("--concurrency",),
                 "jobs each process runs at once: plain functions on up to N threads, "
                 "async def jobs on the process's event loop (default 1: one at a time)",
                 "N"),
    WorkerOption("burst", Flag(), False, None, ("--burst",), "exit once the queues are empty"),
    WorkerOption("max_jobs", Integer(1), None, "MAX_JOBS", ("--max-jobs",),
                 "exit (or, with --processes, restart) after this many jobs"),
    WorkerOption("max_memory_mb", Integer(1), None, "MAX_MEMORY_MB", ("--max-memory",),
                 "exit (or restart) once resident memory passes this many MiB", "MIB"),
    WorkerOption("time_limit", Seconds(above_zero=True), None, "TIME_LIMIT", ("--time-limit",),
                 "default per-job time limit (a job's own time_limit wins)", "SECONDS"),
    WorkerOption("isolation", Choice(ISOLATIONS), "none", "ISOLATION", ("--isolation",),
                 "run each job in the worker process (none) or in a child process it can "
                 "kill (process: hard time limit, memory cap, crashes fail the job)"),
    WorkerOption("hard_time_limit", Seconds(above_zero=True), None, "HARD_TIME_LIMIT",
                 ("--hard-time-limit",),
                 "with --isolation process: SIGKILL a job's process after this long "
                 "(default: its time limit + max(1 s, 10%%))", "SECONDS"),
    WorkerOption("job_memory_mb", Integer(1), None, "JOB_MEMORY_MB", ("--job-memory",),
                 "with --isolation process: SIGKILL a job's process once its resident "
                 "memory passes this many MiB", "MIB"),
    WorkerOption(
        "shutdown_timeout", Seconds(above_zero=False), 30.0, "SHUTDOWN_TIMEOUT",
        ("--shutdown-timeout",),
        "on SIGTERM, wait this long for the running job before handing it back to its queue",
        "SECONDS",
    ),
    WorkerOption("poll_interval", Seconds(above_zero=True), 5.0, "POLL_INTERVAL",
                 ("--poll-interval", "--interval"),
                 "longest idle sleep when no event wakes the worker", "SECONDS"),
    # No WORKER key: the top-level QLESS['HEARTBEAT'] is its setting (conf.reader.parse).
    WorkerOption("heartbeat_interval", Seconds(above_zero=True), None, None,
                 ("--heartbeat-interval",),
                 "seconds between lock renewals (default: a third of the lease)", "SECONDS"),
    WorkerOption("prefetch", Integer(0), 1, "PREFETCH", ("--prefetch",),
                 "jobs each process pops ahead of the one it runs while recent jobs are short "
                 "(default 1; 0 pops only when free)", "N"),
    WorkerOption("name", Text(), None, None, ("--worker-name",),
                 "worker name (default host-pid-random; with --processes a -<n> suffix is "
                 "added)", "NAME"),
    WorkerOption("startup_delay", Seconds(above_zero=False), 0.0, None, ("--startup-delay",),
                 "sleep a random time up to this before the first pop", "SECONDS"),
    WorkerOption("reload", Flag(), False, None, ("--reload",),
                 "restart when code changes (development only)", worker=False),
    WorkerOption("sync_recurring", Flag(), False, None, ("--sync-recurring",),
                 "sync the declared recurring schedules (as qless_recur, without --prune) "
                 "before starting; refuse to start on errors", worker=False),
)


def worker_option(name: str) -> WorkerOption:
    """The table entry called `name`."""
    for option in WORKER_OPTIONS:
        if option.name == name:
            return option
    raise KeyError(name)


def worker_default(name: str) -> Any:
    """The declared default of the option `name` (for dataclass field defaults)."""
    return worker_option(name).default
