"""The qless worker: `Worker` runs jobs serially, `PoolWorker` up to N at once
(`--concurrency N`, `pool`); `Supervisor` keeps N worker processes.

A klass is looked up in the registry first, then (only then) as a Django Tasks task of a
`QlessBackend` (see `targets`); `async def` functions run on one event loop per worker.

How a job ends, as written to qless:

- returns: `complete`, with the return value in the job data's `"result"` when it is kept
  (Tasks tasks always; `@qless_job` with `store_result` or `QLESS['STORE_RESULTS']`). A
  value that cannot be kept fails the job into `<queue>-ResultNotStorableError`.
- raises: the attempt is recorded in the job's history (`task-error`), then the job is
  failed into group `<queue>-<ExceptionClass>` with the formatted traceback as message
  (cut to about 16 KB). If the job's `retry_policy` covers the exception, qless
  `retry` is called instead with the policy's delay *and* that group and message, so a job
  whose retries run out is failed by qless into the same `<queue>-<ExceptionClass>` group
  (not qless's generic `failed-retries-<queue>`). A bad payload, or a return value that
  cannot be kept, is never retried.
- raises `RetryJob(delay, group=, message=)`: `retry` with that delay, and the given group
  (default `<queue>-RetryJob`) for when the retries run out.
- klass neither registered nor a Tasks task: failed at once into
  `<queue>-UnknownJobError`; nothing is imported from a name found in Redis (a task's
  module only when the job carries a `QlessBackend` alias and lies in an installed app).
- over its time limit: stopped (an `async def` job's task is cancelled) and handled as
  if it raised `TimeLimitExceeded` (a BaseException, so a policy retries it only when its
  `retry_on` names it).
- lock lost (`lock_lost`/`canceled` on the worker's own channel, or a refused heartbeat):
  stopped; nothing is written, the job now belongs to someone else.
- lease not renewed in time (Redis unreachable, replies lost or late): fenced, i.e. stopped
  (`LeaseExpired`, a `LockLost`) shortly before the lock expires; nothing is written
  (see `fence`).
- still running when a graceful stop's `shutdown_timeout` runs out: stopped and handed back
  with `requeue` by this worker (priority, tags, retries and data unchanged) after a
  `handed-back` history entry. qless's put sets `remaining` to `retries`, so no retry is
  spent; a job that had already used some gets them back.
"""

from .interrupt import JobInterrupted, LeaseExpired, LockLost, ShutdownTimeout, TimeLimitExceeded
from .loop import Worker
from .options import WorkerOptions
from .pool import PoolWorker, build_worker
from .supervisor import Supervisor

__all__ = [
    "JobInterrupted",
    "LeaseExpired",
    "LockLost",
    "PoolWorker",
    "ShutdownTimeout",
    "Supervisor",
    "TimeLimitExceeded",
    "Worker",
    "WorkerOptions",
    "build_worker",
]
