"""Hooks around every job: metadata added at enqueue, a context manager around each run.

An enqueue hook is called once per job in the enqueuing process, before the job is put or
written to the outbox (also for bulk enqueues and cron slots); the entries it returns are
kept in the job's data under `META_KEY` ("meta"), as JSON any qless client reads. A run
hook is called once per job in the worker and returns a context manager entered around
the job's execution (in the job's own task for an `async def` job, in the child with
`--isolation process`); the job's exception passes through its `__exit__`.

Declare them in `QLESS["HOOKS"]` (`{"ENQUEUE": ["dotted.path"], "RUN": [...]}`) or add them
with `add_enqueue_hook` / `add_run_hook`. A hook that raises, or whose entries are not
JSON or too large, is logged once per process and skipped: the job is never lost to it.
"""

from __future__ import annotations

import sys

from .core.hooks import (
    META_KEY,
    EnqueueHook,
    JobRun,
    PendingJob,
    RunHook,
    add_enqueue_hook,
    add_run_hook,
    metadata_of,
    remove_enqueue_hook,
    remove_run_hook,
)


def in_job_child() -> bool:
    """Whether this process is the child of one job (`--isolation process`), which ends
    with `os._exit`: a run hook that buffers (spans, events) must flush before it exits."""
    # Read, never imported: a web process has no worker modules to load for this.
    child = sys.modules.get("django_qless.worker.child")
    return bool(child is not None and child.IN_CHILD)


__all__ = [
    "META_KEY",
    "EnqueueHook",
    "JobRun",
    "PendingJob",
    "RunHook",
    "add_enqueue_hook",
    "add_run_hook",
    "in_job_child",
    "metadata_of",
    "remove_enqueue_hook",
    "remove_run_hook",
]
