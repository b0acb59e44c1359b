"""The `Selection`s of the job lists: a queue's tab, a failure group, a tag, completed, tracked.

Each list is one sorted set the script (or a plain ZRANGE) pages by offset, so a step is
one bounded read; the cursor is the offset reached. A filter naming more than a list's
own criteria is walked by the search's `FilterWalk`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core import Client, InvalidArgumentError, keys
from .filter_walk import FilterWalk
from .selection import START, JobFilter, Selection, Step

#: Candidates read per call (the script's largest page).
PAGE = 1000
#: The tabs of a queue that list jobs, as states of a filter.
QUEUE_STATES = ("waiting", "running", "scheduled", "stalled", "depends")

Fetch = Callable[[int, int], list[str]]


class UnwalkableFilterError(ValueError):
    """A filter no walker of this installation can walk."""


@dataclass
class ListWalk:
    """Walks one paged list by offset."""

    filter: JobFilter
    fetch: Fetch
    total: int

    def step(self, cursor: str, limit: int) -> Step:
        """The next `limit` (at most `PAGE`) jids of the list after `cursor`."""
        offset = int(cursor) if cursor != START else 0
        size = max(1, min(limit, PAGE))
        jids = self.fetch(offset, size)
        looked = offset + len(jids)
        # A short page is the end (a list that grew meanwhile is walked to its new end).
        return Step(tuple(jids), str(looked) if len(jids) == size else None, looked,
                    max(self.total, looked))


#: The filter of the tracked list (no `JobFilter` field names it).
TRACKED = "tracked"


def tracked_walk(client: Client) -> ListWalk:
    """Every tracked jid, most recently tracked first."""
    return ListWalk(JobFilter(), client.tracked_jids, client.tracked_count())


def list_walk(client: Client, job_filter: JobFilter) -> ListWalk | None:
    """The walk of the job list a filter names exactly, or None if it names no list."""
    named = set(job_filter.query())
    queue, state = job_filter.queue, job_filter.state
    if named == {"queue", "state"} and state in QUEUE_STATES:
        counts = client.existing_queue(queue).counts()
        total = int(getattr(counts, state))
        if state == "waiting":
            return ListWalk(job_filter, client.existing_queue(queue).waiting, total)
        walker = client.existing_queue(queue)
        return ListWalk(job_filter, lambda o, c: walker.jobs(state, o, c), total)
    if named == {"state", "group"} and state == "failed":
        group = job_filter.group
        return ListWalk(job_filter, lambda o, c: client.failed_jids(group, o, c)[1],
                        client.failed().get(group, 0))
    if named == {"tag"}:
        tag = job_filter.tag
        return ListWalk(job_filter, lambda o, c: client.tagged_jids(tag, o, c)[1],
                        client.tagged_jids(tag, 0, 1)[0])
    if named == {"state"} and state == "complete":
        return ListWalk(job_filter, client.completed, completed_count(client))
    return None


def completed_count(client: Client) -> int:
    """How many completed jobs qless keeps (its completed set)."""
    return int(client.redis.zcard(keys.COMPLETED))


def selection_for(client: Client, job_filter: JobFilter) -> Selection:
    """The walk of a filter: its list's own, else the search's; `UnwalkableFilterError` if none."""
    walk = list_walk(client, job_filter)
    if walk is not None:
        return walk
    try:
        return FilterWalk(client, job_filter)
    except InvalidArgumentError as exc:
        raise UnwalkableFilterError(str(exc)) from None
