"""The record attributes of every worker log line about a job (logging's `extra`).

`jid`, `klass`, `queue` and `attempt` name the job a line is about, so a JSON formatter
emits them as fields and a log search finds every line of one job. A line that knows
only the jid (a fence firing, a child process dying) carries None for the others.
"""

from __future__ import annotations

from typing import Any

from ..core import Job

#: The attribute names, as a formatter reads them off the record.
JOB_FIELDS = ("jid", "klass", "queue", "attempt")


def job_fields(job: Job) -> dict[str, Any]:
    """The attributes of a line about `job`."""
    return {"jid": job.jid, "klass": job.klass, "queue": job.queue_name,
            "attempt": job.attempt}


def jid_fields(jid: str | None) -> dict[str, Any]:
    """The attributes of a line about a job known only by its jid."""
    return {"jid": jid, "klass": None, "queue": None, "attempt": None}
