"""Demo data: seed subscribers and issues, enqueue jobs that end in every qless state.

`seed()` returns a `Manifest` of the jids it created; `verify()` reads them back through
django_qless's client and says, job by job, whether each reached the state it should.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from django_qless.connection import client_for_queue
from django_qless.core import Job

from . import mail
from .models import Delivery, Export, Issue, Subscriber
from .pipeline import send_issue
from .qless_jobs import (
    archive_issue,
    export_subscribers,
    import_partner_feed,
    purge_old_exports,
    send_welcome_email,
)
from .tasks import weekly_digest

SUBSCRIBERS = [
    ("alice@example.com", "Alice Martin"),
    ("bruno@example.com", "Bruno Costa"),
    ("chen@example.org", "Chen Wei"),
    ("dana@example.org", "Dana Cohen"),
    ("emeka@example.net", "Emeka Obi"),
    ("fatima@example.net", "Fatima Zahra"),
    ("gustav@example.com", "Gustav Lind"),
    ("hana@example.com", "Hana Novak"),
    ("ivan@example.org", "Ivan Petrov"),
    ("julia@example.org", "Julia Rossi"),
    ("kofi@example.net", "Kofi Mensah"),
    ("lena@example.net", "Lena Vogel"),
    ("mateo@example.com", "Mateo Silva"),
    ("nina@example.com", "Nina Larsen"),
    ("noor@greylist.example", "Noor Haddad"),
    ("lars@greylist.example", "Lars Berg"),
    ("sam@nxdomain.example", "Sam Typo"),
]
BACK_ISSUES = ["Back issue: January digest", "Back issue: February digest"]
ISSUE_BODY = (
    "Hello {name}!\n\nThis month: three new features, one fixed bug and a recipe.\n\n"
    "See you next month."
)
#: The purge's schedule, as declared on the job (synced by `manage.py qless_recur`).
PURGE_EVERY = 3600
SCHEDULED_DELAY = timedelta(days=1).total_seconds()
EXPORT_BATCH = 5


@dataclass
class Manifest:
    """What `seed()` enqueued, by role (JSON-serialisable)."""

    welcome: list[str]
    welcome_retried: list[str]
    welcome_bounced: list[str]
    sent_issue: int
    sent_issue_jobs: list[str]
    sent_issue_finish: str
    subscribers_at_send: int
    scheduled_issue_render: str
    scheduled_issue_waiting: list[str]
    export_id: int
    export: str
    import_ok: str
    import_bad: str
    archive: list[str]
    recurring: str
    #: Result id (the jid) of the `weekly_digest` Django Task.
    digest: str

    def dumps(self) -> str:
        """As JSON."""
        return json.dumps(dataclasses.asdict(self), indent=2)

    @classmethod
    def loads(cls, text: str) -> Manifest:
        """From JSON written by `dumps`."""
        return cls(**json.loads(text))


def seed(*, quick: bool = False) -> Manifest:
    """Create the demo rows and enqueue the demo jobs; `quick` makes the long job short."""
    for email, name in SUBSCRIBERS:
        Subscriber.objects.get_or_create(email=email, defaults={"name": name})
    welcome: dict[str, list[str]] = {"ok": [], "retried": [], "bounced": []}
    for subscriber in Subscriber.objects.filter(welcomed_at=None):
        jid = send_welcome_email.using(tags=["welcome", f"subscriber:{subscriber.pk}"]).enqueue(
            subscriber.pk
        )
        welcome[_welcome_kind(subscriber.email)].append(jid)
    sent, scheduled = _issues()
    sent_jobs = send_issue(sent)
    later_jobs = send_issue(scheduled, delay=SCHEDULED_DELAY)
    export = Export.objects.create()
    export_jid = export_subscribers.enqueue(export.pk, 0.05 if quick else 6.0, EXPORT_BATCH)
    return Manifest(
        welcome=welcome["ok"],
        welcome_retried=welcome["retried"],
        welcome_bounced=welcome["bounced"],
        sent_issue=sent.pk,
        sent_issue_jobs=sent_jobs.all(),
        sent_issue_finish=sent_jobs.finish,
        subscribers_at_send=Subscriber.objects.count(),
        scheduled_issue_render=later_jobs.render,
        scheduled_issue_waiting=[*later_jobs.batches, later_jobs.finish],
        export_id=export.pk,
        export=export_jid,
        import_ok=import_partner_feed.enqueue("spring-fair"),
        import_bad=import_partner_feed.enqueue("legacy-crm"),
        archive=_archive_back_issues(),
        recurring=purge_old_exports.name,
        digest=weekly_digest.enqueue().id,
    )


def _welcome_kind(email: str) -> str:
    """Which outcome the stand-in relay gives this address."""
    domain = mail.domain_of(email)
    if domain in mail.BOUNCING_DOMAINS:
        return "bounced"
    return "retried" if domain in mail.GREYLISTING_DOMAINS else "ok"


def _issues() -> tuple[Issue, Issue]:
    """A new issue to send now and one to send tomorrow (numbered after the existing ones)."""
    number = Issue.objects.exclude(subject__in=BACK_ISSUES).count() + 1
    now = timezone.now()
    sent = Issue.objects.create(subject=f"Issue #{number}: what's new",
                                body=ISSUE_BODY.format(name="reader"))
    scheduled = Issue.objects.create(subject=f"Issue #{number + 1}: coming tomorrow",
                                     body=ISSUE_BODY.format(name="reader"),
                                     send_at=now + timedelta(seconds=SCHEDULED_DELAY))
    return sent, scheduled


def _archive_back_issues() -> list[str]:
    """Queue the back issues for archiving in the `archive` queue, which stays paused."""
    client = client_for_queue("archive")
    client.queue("archive").pause()
    jids = []
    for subject in BACK_ISSUES:
        issue, _ = Issue.objects.get_or_create(
            subject=subject,
            defaults={"body": ISSUE_BODY.format(name="reader"), "status": Issue.Status.SENT,
                      "sent_at": timezone.now() - timedelta(days=60)},
        )
        jids.append(archive_issue.using(tags=["issue", f"issue:{issue.pk}"]).enqueue(issue.pk))
    return jids


@dataclass(frozen=True)
class Check:
    """One expectation about the demo and whether it holds."""

    what: str
    ok: bool
    detail: str


def verify(manifest: Manifest) -> list[Check]:
    """Check every job of the manifest reached the state the demo promises."""
    client = client_for_queue("emails")
    jobs = {job.jid: job for job in client.get_jobs(_all_jids(manifest))}
    checks: list[Check] = []

    def expect(what: str, jids: list[str], state: str,
               extra: Callable[[Job], str | None] | None = None) -> None:
        for jid in jids:
            job = jobs.get(jid)
            found = job.state if job else "missing"
            problem = None if found == state else f"state {found}, expected {state}"
            if problem is None and job is not None and extra is not None:
                problem = extra(job)
            checks.append(Check(f"{what} {jid}", problem is None, problem or state))

    def group(name: str) -> Callable[[Job], str | None]:
        def check(job: Job) -> str | None:
            found = job.failure.group if job.failure else None
            return None if found == name else f"failure group {found}, expected {name}"
        return check

    expect("welcome email", manifest.welcome, "complete")
    expect("welcome email (greylisted, retried)", manifest.welcome_retried, "complete")
    expect("welcome email (bouncing address)", manifest.welcome_bounced, "failed",
           group("emails-MailboxNotFoundError"))
    expect("issue pipeline", manifest.sent_issue_jobs, "complete")
    expect("issue due tomorrow: render", [manifest.scheduled_issue_render], "scheduled")
    expect("issue due tomorrow: batches and finish", manifest.scheduled_issue_waiting,
           "depends")
    expect("subscriber export", [manifest.export], "complete", _export_progress)
    expect("partner import", [manifest.import_ok], "complete")
    expect("malformed partner import", [manifest.import_bad], "failed",
           group("imports-FeedFormatError"))
    expect("archive (paused queue)", manifest.archive, "waiting")
    checks += _database_checks(manifest)
    checks += _qless_checks(manifest)
    checks.append(_digest_check(manifest))
    return checks


def _digest_check(m: Manifest) -> Check:
    """The Django Task completed and its summary reads back through `get_result`."""
    result = weekly_digest.get_result(m.digest)
    if result.status != "SUCCESSFUL":  # TaskResultStatus is a TextChoices
        return Check(f"weekly digest task {m.digest}", False, f"status {result.status}")
    value = result.return_value
    ok = isinstance(value, dict) and value.get("days") == 7 and value.get("attempt") == 1
    return Check(f"weekly digest task {m.digest}", ok, f"result {value}")


def _all_jids(m: Manifest) -> list[str]:
    """Every job jid in the manifest."""
    return [*m.welcome, *m.welcome_retried, *m.welcome_bounced, *m.sent_issue_jobs,
            m.scheduled_issue_render, *m.scheduled_issue_waiting, m.export, m.import_ok,
            m.import_bad, *m.archive]


def _export_progress(job: Job) -> str | None:
    """The export logged one progress entry per batch into its history, the last at 100%."""
    logged = [entry.extra for entry in job.history if entry.what == "progress"]
    if not logged:
        return "no progress entries in its history"
    total = int(logged[-1].get("of", -1))
    if logged[-1].get("rows") != total or len(logged) != math.ceil(total / EXPORT_BATCH):
        return f"progress entries {logged}"
    return None


def _database_checks(m: Manifest) -> list[Check]:
    """What the jobs wrote to the database."""
    greylisted = Subscriber.objects.filter(email__endswith="@greylist.example")
    attempts = sorted(greylisted.values_list("welcome_attempts", flat=True))
    issue = Issue.objects.get(pk=m.sent_issue)
    deliveries = issue.deliveries.count()
    bounced = issue.deliveries.filter(status=Delivery.Status.BOUNCED).count()
    export = Export.objects.get(pk=m.export_id)
    return [
        Check("greylisted welcomes took two attempts",
              not m.welcome_retried or set(attempts) == {2}, f"attempts {attempts}"),
        Check("issue marked sent", issue.status == Issue.Status.SENT, issue.status),
        Check("one delivery per subscriber", deliveries == m.subscribers_at_send,
              f"{deliveries} deliveries for {m.subscribers_at_send} subscribers"),
        Check("bouncing address recorded as bounced", bounced == 1, f"{bounced} bounced"),
        Check("export has every subscriber", export.rows >= m.subscribers_at_send,
              f"{export.rows} rows"),
        Check("partner feed imported", Subscriber.objects.filter(source="feed:spring-fair")
              .exists(), "subscribers from feed:spring-fair"),
    ]


def _qless_checks(m: Manifest) -> list[Check]:
    """Queue-level facts: the paused queue, tracking, the recurring template."""
    client = client_for_queue("maintenance")
    tracked = {job.jid for job in client.tracked().jobs}
    templates = [
        template for jid in client.queue("maintenance").jobs("recurring", 0, 100)
        if (template := client.recurring(jid)) is not None and template.klass == m.recurring
    ]
    intervals = [template.interval for template in templates]
    return [
        Check("archive queue paused", client_for_queue("archive").queue("archive").paused,
              "paused"),
        Check("issue finish and export tracked", {m.sent_issue_finish, m.export} <= tracked,
              f"{len(tracked)} tracked jobs"),
        Check("purge recurs hourly (qless_recur)", intervals == [PURGE_EVERY],
              f"recurring templates of {m.recurring}: intervals {intervals}"),
    ]


def summary(manifest: Manifest) -> dict[str, Any]:
    """Counts by role, for printing."""
    return {
        "welcome emails": len(manifest.welcome) + len(manifest.welcome_retried)
        + len(manifest.welcome_bounced),
        "issue pipeline jobs (sent now)": len(manifest.sent_issue_jobs),
        "issue pipeline jobs (tomorrow)": 1 + len(manifest.scheduled_issue_waiting),
        "subscriber export": 1,
        "partner imports": 2,
        "archive jobs (paused queue)": len(manifest.archive),
        "weekly digest (Django Task)": 1,
    }
