"""`JobSpec`: a job klass as the registry and the worker know it, without its enqueue.

The function, its qless options, how a call becomes job data (`prepare`) and how job data
becomes a call again (`execute`). `definitions.JobDefinition` adds the enqueue on top, so
the registry can hold these without importing the enqueue path.

Job data is qless's JSON object, `{"args": [...], "kwargs": {...}}`, so other qless clients
and UIs can read it (with `"result"` added when a job that keeps its value completes, and
`"meta"` when enqueue hooks add metadata).
Arguments go through JSON in the caller: tuples arrive as lists, NaN/Infinity, sets,
bytes and non-string keys are refused before anything is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    NamedTuple,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
)

from .conf import QlessSettings, get_settings
from .connection import alias_for_queue
from .core import commands, validation
from .core.hooks import META_KEY
from .core.submission import PutOptions, Submission
from .coroutines import invoke
from .exceptions import (
    BadPayloadError,
    InvalidJobError,
    JobDataError,
    QlessConfigurationError,
    QlessError,
)
from .immediate import ImmediateJob
from .results import NOTHING, RESULT_KEY, JobResult, encode_value, find_result
from .retry import RetryPolicy
from .schedules import Schedule, as_schedules

if TYPE_CHECKING:
    from .core import Job

P = ParamSpec("P")
R = TypeVar("R")

#: `unique=`: False, True (the same as "active") or a `put_if_absent` policy.
Unique = bool | Literal["active", "any"]

#: A `JobSpec` or any subclass (what `using` returns).
S = TypeVar("S", bound="JobSpec[Any, Any]")


class JobLike(Protocol):
    """What `execute` needs from a job: a `core.Job`, or an `ImmediateJob`."""

    jid: str
    klass: str
    queue_name: str

    @property
    def data(self) -> dict[str, Any]:
        """The decoded job data."""


class Prepared(NamedTuple):
    """A checked call: the connection alias its job goes to, and its submission."""

    connection: str
    submission: Submission


@dataclass(frozen=True)
class JobSpec(Generic[P, R]):
    """A job klass: the function, its qless defaults, `.using()`, `.call()` and `.result()`."""

    func: Callable[..., R]
    name: str
    queue: str | None = None  # None: QLESS["DEFAULT_QUEUE"] at enqueue time
    priority: float | None = None
    tags: tuple[str, ...] = ()
    retries: int | None = None  # None: qless's default (5), or the existing job's on re-put
    delay: float = 0.0
    depends: tuple[str, ...] = ()
    tracked: bool = False
    heartbeat: float | None = None
    time_limit: float | None = None
    retry_policy: RetryPolicy | None = None
    takes_job: bool = False
    connection: str | None = None  # None: the connection the queue is routed to
    jid: str | None = None
    on_commit: bool | None = None  # None: QLESS["ENQUEUE_ON_COMMIT"]
    db_alias: str | None = None
    store_result: bool | None = None  # None: QLESS["STORE_RESULTS"]
    #: True ("active"): put only while no job of that jid exists but a completed one;
    #: "any": a completed job blocks too. Without `jid`, the jid is derived from the call.
    unique: Unique = False
    #: Schedules from `@qless_job(recur=...)`; `manage.py qless_recur` writes them to Redis.
    recur: tuple[Schedule, ...] = field(default=(), compare=False)
    signature: inspect.Signature = field(init=False, repr=False, compare=False)
    #: (fewest, most) positional arguments a call without keywords may pass, when that
    #: alone decides whether it binds (None: ask `signature.bind`).
    arity: tuple[int, float] | None = field(init=False, repr=False, compare=False)
    #: The put options of every call, built once from the fields above (checked by then).
    put_options: PutOptions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            normalise(self)
        except (QlessError, ValueError, TypeError) as exc:
            raise InvalidJobError(f"job {self.name!r}: {exc}") from exc

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} queue={self.queue or '(default)'}>"

    def using(
        self: S,
        *,
        queue: str | None = None,
        priority: float | None = None,
        tags: Sequence[str] | None = None,
        retries: int | None = None,
        delay: float | timedelta | None = None,
        depends: Sequence[str] | None = None,
        tracked: bool | None = None,
        jid: str | None = None,
        connection: str | None = None,
        on_commit: bool | None = None,
        using: str | None = None,
        unique: Unique | None = None,
    ) -> S:
        """A copy with per-call overrides (None keeps the current value)."""
        given: dict[str, Any] = {
            "queue": queue, "priority": priority, "tags": tags, "retries": retries,
            "delay": seconds(delay), "depends": depends, "tracked": tracked, "jid": jid,
            "connection": connection, "on_commit": on_commit, "db_alias": using,
            "unique": unique,
        }
        return dataclasses.replace(self, **{k: v for k, v in given.items() if v is not None})

    def call(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the function now, in this process, with JSON-round-tripped arguments."""
        prepared = self.prepare(get_settings(), args, kwargs)
        return self.execute(ImmediateJob.from_submission(prepared.submission))

    def execute(self, job: JobLike) -> R:
        """Decode `job.data` and call the function (the worker's path, and immediate mode's).

        An `async def` function is awaited: on the worker's event loop in a worker.
        """
        args, kwargs = decode_payload(job)
        if self.takes_job:
            args = [job, *args]
        if not self.binds_by_count(len(args), kwargs):
            try:
                self.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise BadPayloadError(f"job {job.jid} ({self.name}): {exc}") from exc
        return cast(R, invoke(self.func, args, kwargs))

    def result(self, jid: str) -> JobResult:
        """Status, kept return value and errors of one of this job's jids.

        Immediate mode's results are kept in this process (the newest
        `results.IMMEDIATE_RESULTS`); others are read from Redis, as long as qless keeps
        the job. `ResultDoesNotExist` when no job of this klass has that jid.
        """
        settings = get_settings()
        first = self.connection or alias_for_queue(self.queue or settings.default_queue)
        aliases = [] if settings.immediate else [first, *settings.connections]
        return find_result(self.name, jid, aliases)

    def kept_value(self, value: Any) -> Any:
        """A return value as stored, or `NOTHING` when this job keeps none.

        Kept with `store_result=True`, or with `QLESS['STORE_RESULTS']` when `store_result`
        is None; `ResultNotStorableError` when the value is not JSON or is too large.
        """
        settings = get_settings()
        if not (settings.store_results if self.store_result is None else self.store_result):
            return NOTHING
        return encode_value(value, settings.result_max_bytes, "QLESS['RESULT_MAX_BYTES']")

    def prepare(
        self, settings: QlessSettings, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Prepared:
        """Check everything a put needs, so a bad call fails here and writes nothing."""
        self.check_call(args, kwargs)
        queue = self.queue or settings.default_queue
        connection = self.connection or alias_for_queue(queue)
        if connection not in settings.connections:
            raise QlessConfigurationError(
                f"job {self.name!r} uses connection {connection!r}, "
                f"not in QLESS['CONNECTIONS'] (configured: {', '.join(settings.connections)})"
            )
        encoded = self.encode_call(settings, args, kwargs)
        return Prepared(connection, Submission(
            self.jid or self.new_jid(encoded), self.name, queue, encoded, self.put_options
        ))

    def binds_by_count(self, given: int, kwargs: Mapping[str, Any]) -> bool:
        """True when `given` positional arguments and no keyword provably bind.

        The usual call, positional arguments only, is checked by count: bind() costs more.
        """
        arity = self.arity
        return not kwargs and arity is not None and arity[0] <= given <= arity[1]

    def check_call(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """`TypeError` unless the function takes these arguments."""
        if not self.binds_by_count(len(args) + self.takes_job, kwargs):
            bound = [None, *args] if self.takes_job else list(args)
            try:
                self.signature.bind(*bound, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{self.name}.enqueue(): {exc}") from exc

    @staticmethod
    def encode_call(
        settings: QlessSettings, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> str:
        """The job data of a call, checked (JSON, integers, payload size) and encoded."""
        data = {"args": list(args), "kwargs": dict(kwargs)}
        return validation.encode_data(data, settings.max_payload_bytes)

    def new_jid(self, encoded: str) -> str:
        """The jid of a call without a chosen one: random, or derived from it if unique."""
        return call_jid(self.name, encoded) if self.unique else uuid.uuid4().hex

def seconds(delay: float | timedelta | None) -> float | None:
    """A delay in seconds (timedelta accepted)."""
    return delay.total_seconds() if isinstance(delay, timedelta) else delay


def decode_payload(job: JobLike) -> tuple[list[Any], dict[str, Any]]:
    """`(args, kwargs)` from `{"args": [...], "kwargs": {...}}`; `BadPayloadError` otherwise."""
    try:
        data = job.data
    except JobDataError as exc:
        raise BadPayloadError(f"job {job.jid}: {exc}") from exc
    # A kept return value is no argument (a completed job may be put again as it is), nor
    # is the enqueue hooks' metadata.
    extra = sorted(set(data) - {"args", "kwargs", RESULT_KEY, META_KEY})
    args = data.get("args", [])
    kwargs = data.get("kwargs", {})
    if extra:
        raise BadPayloadError(f"job {job.jid}: unexpected keys in data: {', '.join(extra)}")
    if not isinstance(args, list):
        raise BadPayloadError(f"job {job.jid}: data['args'] must be a list, got {args!r:.80}")
    if not isinstance(kwargs, dict):
        raise BadPayloadError(
            f"job {job.jid}: data['kwargs'] must be an object, got {kwargs!r:.80}"
        )
    return args, kwargs


def positional_arity(signature: inspect.Signature) -> tuple[int, float] | None:
    """(fewest, most) positional arguments that bind when no keyword is given, or None
    when a keyword-only parameter without a default makes every such call fail."""
    fewest, most = 0, 0.0
    for parameter in signature.parameters.values():
        kind = parameter.kind
        if kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            most += 1
            if parameter.default is parameter.empty:
                fewest += 1
        elif kind is parameter.VAR_POSITIONAL:
            most = math.inf
        elif kind is parameter.KEYWORD_ONLY and parameter.default is parameter.empty:
            return None
    return fewest, most


def absent_policy(unique: Unique) -> str | None:
    """The `put_if_absent` policy for a `unique` option (None: a plain put)."""
    if unique is False:
        return None
    return "active" if unique is True else unique


def call_jid(klass: str, encoded: str) -> str:
    """The jid of a unique job enqueued without one: the same for the same klass and data."""
    return hashlib.sha256(f"{klass}\n{encoded}".encode()).hexdigest()[:32]


def normalise(defn: JobSpec[Any, Any]) -> None:
    """Check and normalise a definition's options in place (it is frozen, hence setattr)."""
    def put(name: str, value: Any) -> None:
        object.__setattr__(defn, name, value)

    validation.label(defn.name, "job name")
    if defn.queue is not None:
        validation.queue_name(defn.queue)
    if defn.jid is not None:
        validation.new_jid(defn.jid)
    if defn.priority is not None:
        validation.number(defn.priority, "priority")
    if defn.retries is not None:
        validation.integer(defn.retries, "retries", minimum=0)
    put("delay", float(validation.number(defn.delay, "delay", minimum=0)))
    put("tags", tuple(validation.labels(defn.tags, "tag")))
    put("depends", tuple(validation.jids(defn.depends)))
    for name in ("heartbeat", "time_limit"):
        if getattr(defn, name) is not None:
            put(name, float(validation.positive(getattr(defn, name), name)))
    if defn.store_result is not None and not isinstance(defn.store_result, bool):
        raise TypeError("store_result must be True, False or None")
    for name in ("tracked", "takes_job"):
        if not isinstance(getattr(defn, name), bool):
            raise TypeError(f"{name} must be True or False")
    if defn.unique not in (False, True, *commands.ABSENT_POLICIES):
        raise TypeError("unique must be True, False, 'active' or 'any'")
    if defn.on_commit is not None and not isinstance(defn.on_commit, bool):
        raise TypeError("on_commit must be True, False or None")
    if defn.retry_policy is not None and not isinstance(defn.retry_policy, RetryPolicy):
        raise TypeError("retry_policy must be a RetryPolicy")
    put("recur", as_schedules(defn.recur))
    put("signature", inspect.signature(defn.func))
    put("arity", positional_arity(defn.signature))
    if defn.takes_job and next(iter(defn.signature.parameters), None) != "job":
        raise TypeError("takes_job=True needs a first parameter named 'job'")
    put("put_options", PutOptions(
        delay=defn.delay, priority=defn.priority, tags=defn.tags, retries=defn.retries,
        depends=defn.depends, tracked=defn.tracked, unique=absent_policy(defn.unique),
    ))


if TYPE_CHECKING:
    # A core.Job must satisfy what execute() needs.
    def _job_is_job_like(job: Job) -> JobLike:
        return job
