"""The job data of a Tasks task, and the return value stored beside it.

A task's qless job data is a JSON object::

    {"args": [...], "kwargs": {...},
     "task": {"backend": "<TASKS alias>", "takes_context": false, "run_after": "<ISO>"},
     "result": <return value>}

`args` and `kwargs` are the shape `@qless_job` uses, so other qless clients read them alike;
the `task` object marks the job as a Tasks task (`run_after` only when one was given) and
`@qless_job`'s own decoder refuses it. `result` appears when the worker completes the job
(`with_result`), so the value lives exactly as long as qless keeps the completed job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..results import RESULT_KEY, ResultNotStorableError, encode_value, read_value
from .compat import normalize_json
from .exceptions import TaskDataError

TASK_KEY = "task"


def call_data(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    backend: str,
    takes_context: bool,
    run_after: datetime | None,
) -> dict[str, Any]:
    """The job data of one enqueued call (arguments already normalised by Django)."""
    marker: dict[str, Any] = {"backend": backend, "takes_context": takes_context}
    if run_after is not None:
        marker["run_after"] = run_after.isoformat()
    return {"args": list(args), "kwargs": dict(kwargs), TASK_KEY: marker}


def is_task_data(data: Mapping[str, Any]) -> bool:
    """Whether job data was written by this backend."""
    return isinstance(data.get(TASK_KEY), Mapping)


def read_call(data: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any], Mapping[str, Any]]:
    """`(args, kwargs, marker)` of a task's job data; `TaskDataError` for any other shape."""
    args, kwargs, marker = data.get("args"), data.get("kwargs"), data.get(TASK_KEY)
    if not isinstance(marker, Mapping):
        raise TaskDataError("job data has no 'task' object: not a Django Tasks task")
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise TaskDataError("job data needs 'args' as a list and 'kwargs' as an object")
    return args, kwargs, marker


def run_after_of(marker: Mapping[str, Any]) -> datetime | None:
    """The `run_after` recorded at enqueue, if any (None when absent or unreadable)."""
    value = marker.get("run_after")
    try:
        return None if value is None else datetime.fromisoformat(str(value))
    except ValueError:
        return None


def encode_result(value: Any, limit: int) -> dict[str, Any]:
    """`{"result": value}` after checking the value is JSON that round-trips within `limit`.

    Django's normalisation runs first (tuples become lists, UTF-8 bytes become text), as
    with Django's own backends; NaN, non-string keys, other types and values whose JSON is
    over `limit` bytes raise `ResultNotStorableError` (the worker fails the job with it).
    """
    try:
        normal = normalize_json(value)
    except (TypeError, ValueError) as exc:
        raise ResultNotStorableError(f"return value is not JSON: {exc}") from exc
    return {RESULT_KEY: encode_value(normal, limit, "TASKS OPTIONS 'RESULT_MAX_BYTES'")}


def with_result(data: Mapping[str, Any], value: Any, limit: int) -> dict[str, Any]:
    """The job data to complete a task with: its call plus the checked return value."""
    return {**data, **encode_result(value, limit)}


def read_result(data: Mapping[str, Any]) -> Any:
    """The stored return value (None when the job completed without one)."""
    return read_value(data)
