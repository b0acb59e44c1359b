"""Whether a cron slot job popped late may still run, per its schedule's catch-up policy.

Slot jobs are put up to `crons.LEAD` seconds ahead of their slot. When the workers stop
in between, the job waits in Redis and is popped whenever they come back, however late;
the catch-up policy, applied when missed slots are put, never saw it. So the policy is
applied again when a slot job is about to start: a slot more than `crons.GRACE` seconds
late runs only if it is one of the `catch_up` latest slots missed by then ("skip": none,
"latest": the newest, N: the N newest). Only a first attempt is judged: a retry of a slot
that ran on time is the job's own business.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .crons import GRACE, CronDefinition, CronStore, catch_up_count, jid_stem

if TYPE_CHECKING:
    from .client import Client
    from .job import Job

#: `cron-<name hash>-<slot epoch second>-<digest>`; a run-now jid (`-now-`) never matches.
SLOT_JID = re.compile(r"(cron-[0-9a-f]{16})-([0-9]+)-[0-9a-f]{8}", re.ASCII)
#: History entry of a slot job completed without running.
SKIPPED = "skipped"


@dataclass(frozen=True)
class SlotRef:
    """What a slot jid says: the stem naming its schedule, and the slot instant."""

    stem: str
    slot: float


def slot_ref(jid: str) -> SlotRef | None:
    """The schedule stem and slot of a slot job's jid; None for any other jid."""
    match = SLOT_JID.fullmatch(jid)
    return None if match is None else SlotRef(match[1], float(match[2]))


def too_late(definition: CronDefinition, slot: float, now: float) -> str | None:
    """Why the slot must not run when started at `now`, or None when the policy lets it."""
    late = now - slot
    if late <= GRACE:
        return None
    allowed = catch_up_count(definition.catch_up)
    newer = list(itertools.islice(definition.slots_between(slot, now - GRACE), allowed))
    if len(newer) < allowed:
        return None
    policy = definition.catch_up
    if allowed == 0:
        rule = "catch_up='skip' runs no missed slot"
    else:
        latest = "the newest missed slot" if allowed == 1 else f"the {allowed} newest missed slots"
        rule = (f"catch_up={policy!r} runs only {latest}, and {_when(newer[-1])} is newer")
    return (f"cron slot {_when(slot)} of schedule {definition.name!r} started "
            f"{_duration(late)} late (more than {int(GRACE)} s): {rule}")


class LateSlots:
    """Judges the slot jobs one worker pops; schedule names are found by their jid stem."""

    def __init__(self, client: Client) -> None:
        self.store = CronStore(client)
        self._names: dict[str, str] = {}

    def reason(self, job: Job) -> str | None:
        """Why this popped job must not run (a late slot beyond its policy), else None."""
        ref = slot_ref(job.jid)
        if ref is None or job.remaining < job.retries:
            return None
        now = self.store.client.now()
        if now - ref.slot <= GRACE:
            return None  # on time: no need to read its schedule
        name = self._name(ref.stem)
        stored = self.store.read([name]) if name is not None else []
        if not stored:
            return None  # its schedule is gone: a prune cancels such jobs, nothing to judge by
        return too_late(stored[0].definition, ref.slot, now)

    def _name(self, stem: str) -> str | None:
        """The schedule whose jids start with `stem` (the index is read again on a miss)."""
        if stem not in self._names:
            self._names = {jid_stem(name): name for name in self.store.names()}
        return self._names.get(stem)


def _when(instant: float) -> str:
    """An instant as `YYYY-MM-DD HH:MM:SS UTC`."""
    return dt.datetime.fromtimestamp(instant, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(seconds: float) -> str:
    """`5 min 15 s`, `2 h 3 min 0 s`, `70 s`."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min {secs} s"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
