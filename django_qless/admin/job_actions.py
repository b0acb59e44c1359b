"""Every action on jobs, declared once: URL, buttons, permission, form, operation and texts.

The route table (`routes.py`), the generic view (`views/actions.py`) and the buttons of the
job page, the job lists and the tag page (`presenters.py`) all read `JOB_ACTIONS`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms

from ..core import Client, Job
from . import bulk, permissions
from .dependents import waiting_on
from .feedback import plural
from .forms import JidsForm, MoveForm, PriorityForm, TagForm, TagsForm, UndependForm

Data = dict[str, Any]


class Selection(enum.Enum):
    """What an action's form selects, hence how its operation is applied."""

    #: `jids`; the operation runs on each job found: `operation(job, data)`.
    EACH_JOB = "each job"
    #: `jids`; the operation runs once on every job found: `operation(client, jobs)`.
    ALL_JOBS = "all jobs at once"
    #: `jids`, jobs or not; `operation(client, jid)` says whether it did anything.
    EACH_JID = "each jid"
    #: `jid`; the operation runs on that job: `operation(job, data)`.
    ONE_JOB = "one job"
    #: `tag`; a bulk operation on every job with the tag: `operation(client, tag)`.
    TAG = "every job with a tag"


@dataclass(frozen=True)
class States:
    """The job states an action applies to: `only` these (if any), never the `excluded`."""

    only: frozenset[str] = frozenset()
    excluded: frozenset[str] = frozenset()

    def __contains__(self, state: object) -> bool:
        """Whether the action applies to a job in `state`."""
        return state not in self.excluded and (not self.only or state in self.only)


ANY_STATE = States()


@dataclass(frozen=True)
class Confirmation:
    """The page asking before a destructive action: its title and question."""

    title: str
    question: Callable[[Client, Data], str]
    #: Jids the action must take too for qless to accept it (a cancel's dependents): the
    #: page lists them and the confirmed action includes them.
    also: Callable[[Client, Data], list[str]] | None = None


@dataclass(frozen=True)
class JobAction:
    """One action on jobs (see `Selection` for the shape of `operation`)."""

    #: URL name, reversed as `django_qless_<name>`.
    name: str
    #: URL path after the connection alias.
    path: str
    #: Text of its button on the job page or the tag page.
    label: str
    perm: str
    form: type[forms.Form]
    selection: Selection
    operation: Callable[..., Any]
    #: Audit text of one change: (job, or jid, or bulk outcome; form data) -> text.
    audit: Callable[[Any, Data], str]
    #: Success message: (how many were done, form data) -> text, or None.
    feedback: Callable[[int, Data], str | None]
    states: States = ANY_STATE
    #: Why a job was left alone: formatted with `state` (a job in a state not in `states`).
    refusal: str = ""
    confirm: Confirmation | None = None
    #: It deletes jobs: logged as deletions, and the job page is gone afterwards.
    deletion: bool = False
    #: URL name to go back to; None: the job's page when one job was selected, else overview.
    back: str | None = None
    #: The input its buttons come with besides the selection ("queue", "priority", "tags").
    field: str = ""
    #: The job page's main button (styled as the default button).
    primary: bool = False
    #: Whether the job page offers it for a job (None: not on the job page's action bar).
    on_job_page: Callable[[Job], bool] | None = None
    #: Text of its button in the bar above job lists (None: not there).
    list_label: str | None = None
    #: The job fields (`audit.JOB_FIELDS`) its audit entries show before and after.
    fields: tuple[str, ...] = ()

    @property
    def audit_action(self) -> str:
        """Its key in `audit.ACTIONS`."""
        return self.name.removeprefix("job_")


def counted(verb: str) -> Callable[[int, Data], str | None]:
    """Feedback such as `Retried 3 jobs.` (nothing when no job was done)."""
    return lambda done, _: f"{verb} {plural(done, 'job')}." if done else None


def always(job: Job) -> bool:
    """Offered on the job page whatever the job's tracking."""
    return True


def untrack_one(client: Client, jid: str) -> bool:
    """Stop tracking a jid (one whose job is gone too); False if it was not tracked."""
    return client.untrack(jid)


def tagged_count(client: Client, tag: str) -> int:
    """How many jobs carry a tag."""
    total, _ = client.tagged_jids(tag, 0, 1)
    return total


def retried_tagged(done: int, data: Data) -> str:
    """What retrying a tag did."""
    return f"Retried {plural(done, 'failed job')} tagged {data['tag']}"


def cancelled_tagged(done: int, data: Data) -> str:
    """What cancelling a tag did."""
    return f"Cancelled {plural(done, 'job')} tagged {data['tag']}"


JOB_ACTIONS: tuple[JobAction, ...] = (
    JobAction(
        name="job_retry", path="retry/", label="Retry", list_label="Retry",
        perm=permissions.RETRY, form=JidsForm, selection=Selection.EACH_JOB,
        operation=lambda job, _: job.requeue(),
        states=States(only=frozenset({"failed"})), refusal="is {state}, not failed",
        audit=lambda job, _: f"Retried job {job.jid} in queue {job.queue_name}",
        feedback=counted("Retried"), primary=True, on_job_page=always,
        fields=("state", "queue", "retries left"),
    ),
    JobAction(
        name="job_timeout", path="timeout/", label="Time out", list_label="Time out",
        perm=permissions.RETRY, form=JidsForm, selection=Selection.EACH_JOB,
        operation=lambda job, _: job.timeout(),
        states=States(only=frozenset({"running"})), refusal="is {state}, not running",
        audit=lambda job, _: f"Timed out job {job.jid} held by worker {job.worker}",
        feedback=counted("Timed out"), on_job_page=always, fields=("state", "worker"),
    ),
    JobAction(
        name="job_cancel", path="cancel/", label="Cancel…", list_label="Cancel…",
        perm=permissions.CANCEL, form=JidsForm, selection=Selection.ALL_JOBS,
        # One call for all: qless refuses to cancel a job whose dependent is left out.
        operation=lambda client, jobs: client.cancel(*(job.jid for job in jobs)),
        states=States(excluded=frozenset({"complete"})), refusal="is {state}, not cancelled",
        audit=lambda job, _: (
            f"Cancelled job {job.jid} ({job.klass}, {job.state} in queue "
            f"{job.queue_name or '-'})"
        ),
        feedback=counted("Cancelled"), deletion=True, on_job_page=always,
        fields=("state", "queue"),
        confirm=Confirmation(
            "Cancel jobs", lambda _, data: f"Cancel {plural(len(data['jids']), 'job')}?",
            also=lambda client, data: waiting_on(client, data["jids"]),
        ),
    ),
    JobAction(
        name="job_track", path="track/", label="Track", list_label="Track",
        perm=permissions.EDIT, form=JidsForm, selection=Selection.EACH_JOB,
        operation=lambda job, _: job.track(),
        audit=lambda job, _: f"Tracked job {job.jid}",
        feedback=counted("Tracked"), on_job_page=lambda job: not job.tracked,
        fields=("tracked",),
    ),
    JobAction(
        name="job_untrack", path="untrack/", label="Untrack", list_label="Untrack",
        perm=permissions.EDIT, form=JidsForm, selection=Selection.EACH_JID,
        operation=untrack_one, refusal="was not tracked", back="tracked",
        audit=lambda jid, _: f"Stopped tracking job {jid}",
        feedback=counted("Untracked"), on_job_page=lambda job: bool(job.tracked),
    ),
    JobAction(
        name="job_move", path="move/", label="Move", list_label="Move",
        perm=permissions.EDIT, form=MoveForm, selection=Selection.EACH_JOB,
        operation=lambda job, data: job.move(data["queue"]),
        audit=lambda job, data: (
            f"Moved job {job.jid} from queue {job.queue_name or '-'} to queue {data['queue']}"
        ),
        feedback=counted("Moved"), field="queue", on_job_page=always,
        fields=("queue", "state"),
    ),
    JobAction(
        name="job_priority", path="priority/", label="Set", list_label="Set priority",
        perm=permissions.EDIT, form=PriorityForm, selection=Selection.EACH_JOB,
        operation=lambda job, data: job.set_priority(data["priority"]),
        audit=lambda job, data: (
            f"Set priority of job {job.jid} from {job.priority:g} to {data['priority']:g}"
        ),
        feedback=counted("Changed the priority of"), field="priority", on_job_page=always,
        fields=("priority",),
    ),
    JobAction(
        name="job_tag", path="tag/", label="Add", list_label="Add tags",
        perm=permissions.EDIT, form=TagsForm, selection=Selection.EACH_JOB,
        operation=lambda job, data: job.tag(*data["tags"]),
        audit=lambda job, data: f"Tagged job {job.jid} with {', '.join(data['tags'])}",
        feedback=counted("Tagged"), field="tags", on_job_page=always, fields=("tags",),
    ),
    JobAction(
        name="job_untag", path="untag/", label="Remove tag", list_label="Remove tags",
        perm=permissions.EDIT, form=TagsForm, selection=Selection.EACH_JOB,
        operation=lambda job, data: job.untag(*data["tags"]),
        audit=lambda job, data: f"Removed tags {', '.join(data['tags'])} from job {job.jid}",
        feedback=counted("Untagged"), field="tags", fields=("tags",),
    ),
    JobAction(
        name="job_undepend", path="undepend/", label="Remove this dependency",
        perm=permissions.EDIT, form=UndependForm, selection=Selection.ONE_JOB,
        operation=lambda job, data: job.undepend(data["dependency"]),
        audit=lambda job, data: f"Removed dependency {data['dependency']} of job {job.jid}",
        feedback=lambda done, data: (
            f"Job {data['jid']} no longer waits for {data['dependency']}." if done else None
        ),
        fields=("dependencies", "state"),
    ),
    JobAction(
        name="tag_retry", path="tag-retry/", label="Retry every failed job with this tag",
        perm=permissions.RETRY, form=TagForm, selection=Selection.TAG,
        operation=bulk.retry_tagged, back="search",
        audit=lambda outcome, data: retried_tagged(outcome.done, data),
        feedback=lambda done, data: (
            f"{retried_tagged(done, data)}." if done else f"No failed job tagged {data['tag']}."
        ),
    ),
    JobAction(
        name="tag_cancel", path="tag-cancel/", label="Cancel every job with this tag…",
        perm=permissions.CANCEL, form=TagForm, selection=Selection.TAG,
        operation=bulk.cancel_tagged, back="search", deletion=True,
        audit=lambda outcome, data: cancelled_tagged(outcome.done, data),
        feedback=lambda done, data: f"{cancelled_tagged(done, data)}." if done else None,
        confirm=Confirmation(
            "Cancel jobs by tag",
            lambda client, data: (
                f"Cancel all {plural(tagged_count(client, data['tag']), 'job')} "
                f"tagged {data['tag']}?"
            ),
        ),
    ),
)


def job_action(name: str) -> JobAction:
    """The job action with URL name `name`."""
    return next(action for action in JOB_ACTIONS if action.name == name)
