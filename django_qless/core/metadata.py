"""The enqueue hooks run over submissions: their entries added to each job's data.

The entries go under `hooks.META_KEY`, an ordinary key of the job data every qless client
sees, and are checked as the rest of the data is (JSON that round-trips, the payload
limit) before anything is written. A hook that raises, returns something other than a
mapping, or whose entries fail those checks is logged once and skipped: the job is put
with the other hooks' entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import validation as check
from .exceptions import JobDataError
from .hooks import META_KEY, EnqueueHook, PendingJob, enqueue_hooks, failed
from .submission import Submission

#: The key as it appears in encoded data (found there, the data is decoded to merge).
_KEY_TEXT = json.dumps(META_KEY)


def with_metadata(submissions: Sequence[Submission], max_bytes: int) -> Sequence[Submission]:
    """The submissions with their hooks' metadata (the same sequence without hooks)."""
    hooks = enqueue_hooks()
    if not hooks:
        return submissions
    return [with_entries(submission, hooks, max_bytes) for submission in submissions]


def with_entries(submission: Submission, hooks: Sequence[EnqueueHook], max_bytes: int
                 ) -> Submission:
    """One submission with the entries of each hook that succeeds (one call each)."""
    job = PendingJob(submission.jid, submission.klass, submission.queue, submission.data)
    meta: dict[str, Any] = {}
    data = submission.data
    for hook in hooks:
        try:
            entries = hook(job)
            if entries is None:
                continue
            if not isinstance(entries, Mapping):
                raise TypeError(f"returned {type(entries).__name__}, not a mapping or None")
            if not entries:
                continue
            merged = {**meta, **entries}
            added = with_meta(submission.data, merged, max_bytes)
        except Exception as exc:
            failed("enqueue", hook, exc, "the job is put without its entries")
            continue
        meta, data = merged, added
    if data is submission.data:
        return submission
    return Submission(submission.jid, submission.klass, submission.queue, data,
                      submission.options)


def with_meta(data: str, meta: Mapping[str, Any], max_bytes: int) -> str:
    """Encoded job data with `meta` under `META_KEY`, checked against `max_bytes`.

    Spliced into the encoded object without decoding it (the usual case); data that holds
    the key already is decoded, and `meta` merged into its metadata object.
    """
    encoded = check.encode_data(meta, max_bytes)
    if _KEY_TEXT not in data and data.endswith("}"):
        body = data[:-1].rstrip()
        comma = "" if body.endswith("{") else ","
        return check.data_size_checked(f"{body}{comma}{_KEY_TEXT}:{encoded}}}", max_bytes)
    decoded = check.decode_object(data)
    existing = decoded.get(META_KEY, {})
    if not isinstance(existing, Mapping):
        raise JobDataError(f"job data has a {META_KEY!r} that is not an object")
    return check.encode_data({**decoded, META_KEY: {**existing, **meta}}, max_bytes)
