"""State shared between the worker loop, its monitor thread and its signal handlers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..core import Job
from .fence import Fence
from .interrupt import Interrupter


@dataclass
class RunningJob:
    """The job the worker is running, as seen by the monitor thread."""

    job: Job
    #: Seconds between heartbeats for this job.
    interval: float
    started: float = field(default_factory=time.monotonic)
    #: When the time limit runs out (monotonic), or None.
    deadline: float | None = None
    next_heartbeat: float = 0.0
    #: Why the worker no longer holds the job (`lock_lost`, `canceled`, a refused heartbeat).
    lost: str | None = None
    #: The interruption sent into the job, if any (no heartbeats after it).
    interrupted: str | None = None
    #: Set once the job has run longer than the monitor's LONG_JOB.
    long: bool = False
    #: Set once jobs held behind it were given back (it ran longer than HOLD_LIMIT).
    held_released: bool = False
    #: When the job is stopped unless its lease is renewed (see `fence`).
    fence: Fence | None = None
    #: Set by the job thread when the job ended (under the monitor's lock): a fence that
    #: fires later leaves the job's outcome alone.
    ended: bool = False
    #: What stops this job, when the worker runs several at once (`renewals`); None: the
    #: monitor's own (the serial worker's job thread).
    interrupter: Interrupter | None = None

    def __post_init__(self) -> None:
        self.next_heartbeat = self.started + self.interval


class StopState:
    """Whether and when the worker was asked to stop (set from signal handlers: flags only)."""

    def __init__(self) -> None:
        self.requested_at: float | None = None
        self.reason = ""
        self.signals = 0

    @property
    def requested(self) -> bool:
        """True once a stop was requested."""
        return self.requested_at is not None

    def request(self, reason: str) -> None:
        """Ask the loop to stop after the current job (the first request wins)."""
        if self.requested_at is None:
            self.reason = reason
            self.requested_at = time.monotonic()
