"""Failure groups and messages: `<queue>-<ExceptionClass>` with the traceback, truncated."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from ..exceptions import BadPayloadError
from ..results import ResultNotStorableError

if TYPE_CHECKING:
    from ..retry import RetryPolicy

#: Failure messages are cut to about this many characters (qless stores them in the job).
MAX_MESSAGE = 16 * 1024
#: Failures that fail at once whatever the retry policy: the same data or function would
#: fail the same way on the next try.
NOT_RETRIED = (BadPayloadError, ResultNotStorableError)
#: When cutting, keep this much of the start; the rest comes from the end (the raise site).
HEAD = 2 * 1024


def group_for(queue: str, exc: BaseException | type[BaseException]) -> str:
    """The failure group of an exception raised by a job of `queue`."""
    cls = exc if isinstance(exc, type) else type(exc)
    return f"{queue}-{cls.__name__}"


def message_for(exc: BaseException) -> str:
    """The formatted traceback of `exc`, truncated to `MAX_MESSAGE` characters."""
    return truncate("".join(traceback.format_exception(exc)))


def truncate(text: str, limit: int = MAX_MESSAGE) -> str:
    """Keep the head and the tail of a long text, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    tail = limit - HEAD - 60
    cut = len(text) - HEAD - tail
    return f"{text[:HEAD]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def retried(policy: RetryPolicy | None, exc: BaseException) -> bool:
    """True when the job's retry policy retries this failure."""
    return policy is not None and policy.should_retry(exc) and not isinstance(exc, NOT_RETRIED)
