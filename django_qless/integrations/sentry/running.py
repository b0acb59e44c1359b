"""The run hook: each job in its own isolation scope, as a transaction, its failure captured.

The scope is forked from the worker's and its breadcrumbs cleared, so nothing of one job
(breadcrumbs, tags, the trace) reaches the next, whether jobs run one after another, in
slot threads or as tasks on the worker's event loop (the scope lives in context
variables, and the hook is entered in the job's own thread or task).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sentry_sdk
from sentry_sdk.consts import OP, SPANDATA, SPANSTATUS
from sentry_sdk.tracing import Transaction
from sentry_sdk.tracing_utils import has_tracing_enabled
from sentry_sdk.utils import capture_internal_exceptions, event_from_exception

from ...core.hooks import JobRun
from ...hooks import in_job_child
from . import duplicates
from .context import job_processor
from .crons import CronOptions, checked_in
from .propagation import headers_of
from .verdicts import Verdict, verdict_of

#: The transaction source of a task: `TransactionSource.TASK`, which sentry-sdk 2.15 lacks.
TASK_SOURCE = "task"
#: The mechanism of a job's failure: the worker handles it, but the job did not.
MECHANISM = {"type": "qless", "handled": False}


@contextmanager
def job_scope(run: JobRun, crons: CronOptions, origin: str) -> Iterator[None]:
    """The job's isolation scope, its Crons check-ins and its transaction, around its run."""
    try:
        with _isolated(run, crons, origin):
            yield
    finally:
        if in_job_child():
            sentry_sdk.flush()  # the child ends with os._exit: send what it captured now


@contextmanager
def _isolated(run: JobRun, crons: CronOptions, origin: str) -> Iterator[None]:
    """The job in a scope of its own, its trace continued."""
    with sentry_sdk.isolation_scope() as scope:
        scope.clear_breadcrumbs()
        for name, value in tags(run).items():
            scope.set_tag(name, value)
        scope.add_event_processor(job_processor(run))
        if not has_tracing_enabled(sentry_sdk.get_client().options):
            # Errors only: no transaction to build and discard (most of the hook's cost);
            # a failure's event still carries the enqueuing request's trace id.
            scope.generate_propagation_context(headers_of(run))
            with checked_in(run, crons):
                yield from _errors_only(run)
            return
        # With no headers this starts a new trace: never the previous job's.
        transaction = sentry_sdk.continue_trace(
            headers_of(run), op=OP.QUEUE_PROCESS, name=run.klass or "qless job",
            source=TASK_SOURCE, origin=origin)
        with checked_in(run, crons):
            yield from _transaction(run, transaction)


def _errors_only(run: JobRun) -> Iterator[None]:
    """The job's run without tracing: only its failure is captured."""
    try:
        yield
    except BaseException as exc:
        verdict = verdict_of(run, exc)
        if verdict.reported:
            _capture(run, exc, verdict)
        raise


def _transaction(run: JobRun, transaction: Transaction) -> Iterator[None]:
    """The job's transaction around its run, with its status, capturing its failure."""
    sampling = {"qless_job": {"jid": run.jid, "klass": run.klass, "queue": run.queue,
                              "attempt": run.attempt}}
    span = sentry_sdk.start_transaction(transaction, custom_sampling_context=sampling)
    span.__enter__()
    try:
        for name, value in span_data(run).items():
            span.set_data(name, value)
        yield
    except BaseException as exc:
        verdict = verdict_of(run, exc)
        span.set_status(verdict.status)
        if verdict.reported:
            _capture(run, exc, verdict)
        raise
    else:
        span.set_status(SPANSTATUS.OK)
    finally:
        # Exited without the exception: the status set above stands (an interruption
        # is no error, which the transaction's own exit would make it).
        span.__exit__(None, None, None)


def _capture(run: JobRun, exc: BaseException, verdict: Verdict) -> None:
    """The failure as one exception event, in the job's transaction, with its group."""
    with capture_internal_exceptions():
        event, hint = event_from_exception(
            (type(exc), exc, exc.__traceback__),
            client_options=sentry_sdk.get_client().options, mechanism=dict(MECHANISM))
        event.setdefault("tags", {})["qless.group"] = verdict.group
        sentry_sdk.capture_event(event, hint=hint)
        duplicates.captured(run.jid, run.attempt)



def tags(run: JobRun) -> dict[str, str]:
    """The tags of everything the job sends."""
    return {"qless.queue": run.queue, "qless.klass": run.klass, "qless.jid": run.jid,
            "qless.attempt": str(run.attempt), "qless.worker": run.worker}


def span_data(run: JobRun) -> dict[str, Any]:
    """The messaging data of the job's transaction."""
    return {SPANDATA.MESSAGING_SYSTEM: "qless",
            SPANDATA.MESSAGING_DESTINATION_NAME: run.queue,
            SPANDATA.MESSAGING_MESSAGE_ID: run.jid,
            SPANDATA.MESSAGING_MESSAGE_RETRY_COUNT: run.attempt - 1}
