"""A recurring job template: the record read from `recur.get`, and its `recur.*` commands."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import commands
from . import validation as check
from .exceptions import QlessError
from .records import as_list, as_number

if TYPE_CHECKING:
    from .client import Client


@dataclass(frozen=True)
class Template:
    """A recurring template as stored: `recur.get` plus, when read, its next run time."""

    jid: str
    klass: str
    queue: str
    priority: float
    interval: float
    retries: int
    backlog: int
    #: The job data as stored (JSON text, normally an object).
    data: str
    tags: tuple[str, ...]
    #: How many jobs it has spawned.
    count: int
    #: Score in `ql:q:<queue>-recur`; None when missing from that set or not read.
    next_run: float | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], next_run: float | None = None) -> Template:
        """Build from a `recur.get` object (raises `QlessError` when a field is unreadable)."""
        raw = obj.get("data")
        try:
            return cls(
                jid=str(obj["jid"]),
                klass=str(obj.get("klass", "")),
                queue=str(obj.get("queue", "")),
                priority=as_number(obj.get("priority", 0)),
                interval=as_number(obj.get("interval", 0)),
                retries=int(as_number(obj.get("retries", 0))),
                backlog=int(as_number(obj.get("backlog") or 0)),
                data=raw if isinstance(raw, str) else json.dumps(raw),
                tags=tuple(str(tag) for tag in as_list(obj.get("tags"))),
                count=int(as_number(obj.get("count", 0))),
                next_run=None if next_run is None else float(next_run),
            )
        except (TypeError, ValueError) as exc:
            raise QlessError(f"recurring job {obj.get('jid')!r} is malformed: {exc}") from exc


class RecurringJob:
    """A template that spawns job `<jid>-<n>` into its queue every `interval` seconds."""

    def __init__(self, client: Client, obj: Mapping[str, Any]) -> None:
        self.client = client
        self.template = Template.from_json(obj)

    def __repr__(self) -> str:
        return f"<RecurringJob {self.jid} {self.klass} every {self.interval}s in {self.queue_name}>"

    @property
    def jid(self) -> str:
        """The template's jid (its spawns are `<jid>-<n>`)."""
        return self.template.jid

    @property
    def klass(self) -> str:
        """The klass given to each spawn."""
        return self.template.klass

    @property
    def queue_name(self) -> str:
        """The queue spawns go to."""
        return self.template.queue

    @property
    def priority(self) -> float:
        """The priority given to each spawn."""
        return self.template.priority

    @property
    def interval(self) -> float:
        """Seconds between spawns."""
        return self.template.interval

    @property
    def retries(self) -> int:
        """The retries given to each spawn."""
        return self.template.retries

    @property
    def count(self) -> int:
        """How many jobs the template has spawned."""
        return self.template.count

    @property
    def backlog(self) -> int:
        """Missed runs spawned after downtime (0: all of them)."""
        return self.template.backlog

    @property
    def raw_data(self) -> str:
        """The template's data as stored (JSON text)."""
        return self.template.data

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags given to each spawn."""
        return self.template.tags

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
        encoded = None if data is None else self.client.encode(data)
        changes = [
            (name, value)
            for name, value in (
                ("priority", priority), ("interval", interval), ("retries", retries),
                ("data", encoded), ("klass", klass), ("queue", queue), ("backlog", backlog),
            )
            if value is not None
        ]
        if changes:
            self.client.run(commands.recur_update(self.jid, changes))
            self._reload()

    def tag(self, *tags: str) -> tuple[str, ...]:
        """Add tags given to future spawns; returns the template's tags."""
        return self._set_tags(self.client.run(commands.recur_tag(self.jid, tags)))

    def untag(self, *tags: str) -> tuple[str, ...]:
        """Remove tags; returns the template's tags."""
        return self._set_tags(self.client.run(commands.recur_untag(self.jid, tags)))

    def cancel(self) -> None:
        """Delete the template (jobs already spawned stay)."""
        self.client.run(commands.unrecur(self.jid))

    def _set_tags(self, reply: str) -> tuple[str, ...]:
        """Keep the tags a `recur.tag`/`recur.untag` reply lists; returns them."""
        tags = tuple(str(tag) for tag in as_list(json.loads(reply)))
        self.template = dataclasses.replace(self.template, tags=tags)
        return tags

    def _reload(self) -> None:
        """Refresh the fields after an update."""
        reply = self.client.run(commands.recur_get(self.jid))
        if reply is not None:
            self.template = Template.from_json(json.loads(reply))
            self.__dict__.pop("data", None)  # drop the cached decoded data
