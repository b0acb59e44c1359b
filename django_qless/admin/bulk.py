"""Bulk operations on a whole failure group or tag, in batches of `CHUNK` jobs.

Each batch is one script call where qless has one (`unfail`, `cancel`), so 10,000 jobs
take about twenty calls, and every loop is bounded by the size found at the start.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..core import Client, Job, QlessError
from .feedback import problem_text

CHUNK = 500
#: Most jobs one bulk request handles (a second request carries on).
MAX_JOBS = 100_000
#: Largest page the script returns per list query.
READ_PAGE = 1000


@dataclass
class Outcome:
    """What a bulk operation did."""

    done: int = 0
    batches: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


def retry_group(client: Client, group: str) -> Outcome:
    """Put every job of a failure group back into its own queue, oldest first."""
    outcome = Outcome()
    total, _ = client.failed_jids(group, 0, 1)
    for _ in range(min(total, MAX_JOBS) // CHUNK + 1):
        total, _ = client.failed_jids(group, 0, 1)
        _, jids = client.failed_jids(group, max(total - CHUNK, 0), CHUNK)
        if not jids or not _retry_batch(client, group, jids, outcome):
            break
    return outcome


def _retry_batch(client: Client, group: str, jids: list[str], outcome: Outcome) -> bool:
    """Retry the oldest batch of a group; False when nothing could be done."""
    jobs = client.get_jobs(jids)
    queues = {job.queue_name for job in jobs}
    before = outcome.done
    outcome.batches += 1
    try:
        if len(queues) == 1 and len(jobs) == len(jids):
            # The batch is the group's tail and all from one queue: one `unfail` moves it.
            outcome.done += client.unfail(queues.pop(), group, len(jids))
        else:
            _requeue_each(jobs, outcome)
    except QlessError as exc:
        outcome.errors.append((group, problem_text(exc)))
        return False
    return outcome.done > before


def _requeue_each(jobs: list[Job], outcome: Outcome) -> None:
    """Requeue failed jobs one by one into their own queues."""
    for job in jobs:
        if job.state != "failed":
            continue
        try:
            job.requeue()
        except QlessError as exc:
            outcome.errors.append((job.jid, problem_text(exc)))
        else:
            outcome.done += 1


def cancel_group(client: Client, group: str) -> Outcome:
    """Cancel every job of a failure group, newest first."""
    outcome = Outcome()
    total, _ = client.failed_jids(group, 0, 1)
    for _ in range(min(total, MAX_JOBS) // CHUNK + 1):
        _, jids = client.failed_jids(group, 0, CHUNK)
        if not jids or not _cancel_batch(client, jids, outcome, label=group):
            break
    return outcome


def _cancel_batch(client: Client, jids: list[str], outcome: Outcome, *, label: str) -> bool:
    """Cancel one batch in one call; False when qless refused it."""
    outcome.batches += 1
    try:
        outcome.done += len(client.cancel(*jids))
    except QlessError as exc:
        outcome.errors.append((label, problem_text(exc)))
        return False
    return True


def tagged_jids(client: Client, tag: str) -> Iterator[list[str]]:
    """Every jid with the tag at the start, in batches (read first: retrying re-tags jobs)."""
    total, _ = client.tagged_jids(tag, 0, 1)
    jids: list[str] = []
    for offset in range(0, min(total, MAX_JOBS), READ_PAGE):
        jids += client.tagged_jids(tag, offset, READ_PAGE)[1]
    unique = list(dict.fromkeys(jids))
    for start in range(0, len(unique), CHUNK):
        yield unique[start : start + CHUNK]


def retry_tagged(client: Client, tag: str) -> Outcome:
    """Requeue every failed job carrying the tag."""
    outcome = Outcome()
    for jids in tagged_jids(client, tag):
        outcome.batches += 1
        _requeue_each(client.get_jobs(jids), outcome)
    return outcome


def cancel_tagged(client: Client, tag: str) -> Outcome:
    """Cancel every job carrying the tag (completed jobs are kept until they expire)."""
    outcome = Outcome()
    for jids in tagged_jids(client, tag):
        live = [job.jid for job in client.get_jobs(jids) if job.state != "complete"]
        if live and not _cancel_batch(client, live, outcome, label=tag):
            break
    return outcome
