"""A recurring job template (`recur.*` commands)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import validation as check
from .records import as_list, as_number

if TYPE_CHECKING:
    from .client import Client


class RecurringJob:
    """A template that spawns job `<jid>-<n>` into its queue every `interval` seconds."""

    def __init__(self, client: Client, obj: Mapping[str, Any]) -> None:
        self.client = client
        self._load(obj)

    def _load(self, obj: Mapping[str, Any]) -> None:
        """Set the fields from a `recur.get` object."""
        self.jid: str = str(obj["jid"])
        self.klass: str = str(obj.get("klass", ""))
        self.queue_name: str = str(obj.get("queue", ""))
        self.priority: int | float = as_number(obj.get("priority", 0))
        self.interval: int | float = as_number(obj.get("interval", 0))
        self.retries: int = int(as_number(obj.get("retries", 0)))
        self.count: int = int(as_number(obj.get("count", 0)))
        self.backlog: int = int(as_number(obj.get("backlog") or 0))
        raw = obj.get("data")
        self.raw_data: str = raw if isinstance(raw, str) else json.dumps(raw)
        self.tags: tuple[str, ...] = tuple(str(t) for t in as_list(obj.get("tags")))
        self.__dict__.pop("data", None)  # drop the cached decoded data

    def __repr__(self) -> str:
        return f"<RecurringJob {self.jid} {self.klass} every {self.interval}s in {self.queue_name}>"

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """The template's data as a dict (raises `JobDataError` if it is not a JSON object)."""
        return check.decode_object(self.raw_data)

    def update(
        self,
        *,
        priority: float | None = None,
        interval: float | None = None,
        retries: int | None = None,
        data: Mapping[str, Any] | None = None,
        klass: str | None = None,
        queue: str | None = None,
        backlog: int | None = None,
    ) -> None:
        """Change some fields of the template (interval shifts the next run)."""
        pairs: list[Any] = []
        if priority is not None:
            pairs += ["priority", check.number(priority, "priority")]
        if interval is not None:
            pairs += ["interval", check.positive(interval, "interval")]
        if retries is not None:
            pairs += ["retries", check.integer(retries, "retries", minimum=0)]
        if data is not None:
            pairs += ["data", self.client.encode(data)]
        if klass is not None:
            pairs += ["klass", check.label(klass, "klass")]
        if queue is not None:
            pairs += ["queue", check.queue_name(queue)]
        if backlog is not None:
            pairs += ["backlog", check.integer(backlog, "backlog", minimum=0)]
        if pairs:
            self.client.call("recur.update", self.jid, *pairs)
            self._reload()

    def tag(self, *tags: str) -> tuple[str, ...]:
        """Add tags given to future spawns; returns the template's tags."""
        reply = self.client.call("recur.tag", self.jid, *check.labels(tags, "tag"))
        self.tags = tuple(as_list(json.loads(reply)))
        return self.tags

    def untag(self, *tags: str) -> tuple[str, ...]:
        """Remove tags; returns the template's tags."""
        reply = self.client.call("recur.untag", self.jid, *check.labels(tags, "tag"))
        self.tags = tuple(as_list(json.loads(reply)))
        return self.tags

    def cancel(self) -> None:
        """Delete the template (jobs already spawned stay)."""
        self.client.call("unrecur", self.jid)

    def _reload(self) -> None:
        """Refresh the fields after an update."""
        reply = self.client.call("recur.get", self.jid)
        if reply is not None:
            self._load(json.loads(reply))
