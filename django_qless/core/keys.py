"""Every Redis key and pub/sub channel of the qless schema that Python reads or listens to.

The script writes the qless keys; Python only reads a few of them directly where the script
has no paginated or side-effect-free query (waiting jobs in pop order, tracked jids, the
workers' last-seen times, recurring next-run scores, the next waiting job's priority for
queue latency) and subscribes to the channels. This
module is the only place outside `lua/` that spells them out. Keys under `OWN_PREFIX` are
django_qless's own, written by Python.
"""

from __future__ import annotations

#: Namespace of every qless key and channel.
PREFIX = "ql:"
#: Tracked jids (zset: jid -> time tracking started).
TRACKED = "ql:tracked"
#: Workers (zset: worker name -> last time seen).
WORKERS = "ql:workers"
#: Config overrides (hash).
CONFIG = "ql:config"
#: Queue names (zset: name -> time first seen).
QUEUES = "ql:queues"
#: Failure groups that hold jobs (set).
FAILURES = "ql:failures"
#: Completed jids (zset: jid -> completion time).
COMPLETED = "ql:completed"
#: Every event, as a JSON object with an `event` field.
LOG_CHANNEL = "ql:log"
#: The channels qless publishes on for everyone (the per-event ones carry tracked jids only).
PLAIN_CHANNELS = (
    LOG_CHANNEL,
    "ql:put",
    "ql:popped",
    "ql:completed",
    "ql:failed",
    "ql:stalled",
    "ql:canceled",
    "ql:track",
    "ql:untrack",
)
#: Namespace of django_qless's own keys (extensions: no other qless client reads or writes
#: them; each is listed in lua/README.md and docs/pages/compatibility.md).
OWN_PREFIX = "ql:django_qless:"
#: The lock one outbox sweeper at a time holds (string: its token; set with NX and PX).
OUTBOX_SWEEP_LOCK = f"{OWN_PREFIX}outbox-sweep"
#: Sorted sets of one queue: `ql:q:<queue>-<kind>`.
QUEUE_SETS = ("work", "locks", "scheduled", "depends", "recur")


def job(jid: str) -> str:
    """The hash of one job."""
    return f"ql:j:{jid}"


def failure_group(group: str) -> str:
    """The failed jids of one failure group (list, newest first)."""
    return f"ql:f:{group}"


def tag(name: str) -> str:
    """The jids carrying one tag (zset: jid -> time tagged)."""
    return f"ql:t:{name}"


def worker_jobs(worker: str) -> str:
    """The jids one worker holds (zset: jid -> lock expiry)."""
    return f"ql:w:{worker}:jobs"


def template(jid: str) -> str:
    """The hash of one recurring template."""
    return f"ql:r:{jid}"


def queue_set(queue: str, kind: str) -> str:
    """One of a queue's sorted sets: work, locks, scheduled, depends or recur."""
    if kind not in QUEUE_SETS:
        raise ValueError(f"unknown queue set {kind!r}; expected one of {QUEUE_SETS}")
    return f"ql:q:{queue}-{kind}"


def worker_channel(worker: str) -> str:
    """The channel where qless tells one worker about its jobs (`lock_lost`, `canceled`)."""
    return f"ql:w:{worker}"


def worker_control(worker: str) -> str:
    """The channel where the admin asks one `qless_worker` process to pause, resume or stop
    (ours, not `worker_channel`: only our workers subscribe, so PUBLISH counts them)."""
    return f"{OWN_PREFIX}control:{worker}"


def worker_presence(worker: str) -> str:
    """The hash a `qless_worker` process publishes about itself (expires when it stops)."""
    return f"{OWN_PREFIX}worker:{worker}"


#: The worker presence hashes ever published (zset: worker name -> last publish time),
#: so listing them needs no SCAN of the whole keyspace.
WORKER_PRESENCE_INDEX = f"{OWN_PREFIX}workers"


def throughput(minute: int) -> str:
    """The jobs django_qless workers finished in one epoch minute (hash: `<outcome>:<queue>`
    -> count), expiring once it is out of the live overview's hour."""
    return f"{OWN_PREFIX}throughput:{minute}"


def depth(minute: int) -> str:
    """Every queue's counts sampled once in one epoch minute (string: JSON), expiring with
    the throughput of that minute."""
    return f"{OWN_PREFIX}depth:{minute}"


def cron_schedule(name: str) -> str:
    """The hash of one synced cron schedule (its definition and the last slot handled)."""
    return f"{OWN_PREFIX}cron:{name}"


def cron_jobs(name: str) -> str:
    """The slot jobs put for one cron schedule (zset: jid -> slot time), for prune/change
    and the admin's last run."""
    return f"{OWN_PREFIX}cron-jobs:{name}"


#: Every synced cron schedule (zset: name -> time of its next slot), read by the workers.
CRON_INDEX = f"{OWN_PREFIX}crons"


def channel_name(channel: str) -> str:
    """A channel's name without the namespace (`ql:log` -> `log`)."""
    return channel.removeprefix(PREFIX)


#: Deploy markers (zset: JSON `{"label", "at"}` -> epoch seconds), newest kept.
DEPLOYS = f"{OWN_PREFIX}deploys"
