"""The qless worker: `Worker` runs jobs serially; `Supervisor` keeps N worker processes.

How a job ends, as written to qless:

- returns: `complete`.
- raises: failed into group `<queue>-<ExceptionClass>` with the formatted traceback as
  message (cut to about 16 KB). If the job's `retry_policy` covers the exception, qless
  `retry` is called instead with the policy's delay *and* that group and message, so a job
  whose retries run out is failed by qless into the same `<queue>-<ExceptionClass>` group
  (not qless's generic `failed-retries-<queue>`). A bad payload is never retried.
- raises `RetryJob(delay, group=, message=)`: `retry` with that delay, and the given group
  (default `<queue>-RetryJob`) for when the retries run out.
- klass not in the registry: failed at once into `<queue>-UnknownJobError`; nothing is
  imported from a name found in Redis.
- over its time limit: stopped and handled as if it raised `TimeLimitExceeded` (a
  BaseException, so a policy retries it only when its `retry_on` names it).
- lock lost (`lock_lost`/`canceled` on the worker's own channel, or a refused heartbeat):
  stopped; nothing is written, the job now belongs to someone else.
- still running when a graceful stop's `shutdown_timeout` runs out: stopped and handed back
  with `requeue` by this worker (priority, tags, retries and data unchanged) after a
  `handed-back` history entry. qless's put sets `remaining` to `retries`, so no retry is
  spent; a job that had already used some gets them back.
"""

from .interrupt import JobInterrupted, LockLost, ShutdownTimeout, TimeLimitExceeded
from .loop import Worker
from .options import WorkerOptions
from .supervisor import Supervisor

__all__ = [
    "JobInterrupted",
    "LockLost",
    "ShutdownTimeout",
    "Supervisor",
    "TimeLimitExceeded",
    "Worker",
    "WorkerOptions",
]
