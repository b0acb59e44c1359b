"""Reading recurring templates from one qless database and applying a plan to it.

Writes happen in one MULTI/EXEC under WATCH of every template the plan looked at. Each
script command that changes a template rewrites its hash `ql:r:<jid>` (recur, recur.update,
recur.tag/untag, unrecur, and the count increment of every spawn), so a concurrent sync,
admin edit or spawn aborts the transaction; the caller then reads and plans again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import redis
from redis.client import Pipeline

from ..core import Client, QlessError
from ..core.records import as_list, as_number
from ..core.script import script_text, translate
from .plan import Action, Template

#: Jids per `jobs recurring` page and per pipelined batch of reads.
PAGE = 500


class RecurStore:
    """The recurring templates of the database behind one qless client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.redis = client.redis
        # A redis-py Script can run inside a pipeline (loading itself first when needed).
        self.script = client.redis.register_script(script_text())

    def database_id(self) -> tuple[str, int]:
        """(server run_id, db index): aliases with equal ids share one database."""
        db = int(self.redis.connection_pool.connection_kwargs.get("db", 0) or 0)
        try:
            run_id = str(self.redis.info("server").get("run_id", ""))
        except redis.ResponseError:
            # INFO can be denied by ACLs or renamed: then only identical clients count as one.
            run_id = f"client-{id(self.redis)}"
        return run_id, db

    def listed_jids(self) -> list[str]:
        """Jids of every recurring template, from `queues` and `jobs recurring <queue>`."""
        jids: list[str] = []
        for counts in self.client.queues():
            queue = self.client.queue(counts.name)
            offset = 0
            while True:
                page = queue.jobs("recurring", offset, PAGE)
                jids += page
                if len(page) < PAGE:
                    break
                offset += PAGE
        return list(dict.fromkeys(jids))

    def read(self, jids: Iterable[str]) -> list[Template]:
        """`recur.get` and the next run time of each jid (missing ones are left out)."""
        wanted = list(dict.fromkeys(jids))
        objects: list[dict[str, Any]] = []
        for start in range(0, len(wanted), PAGE):
            replies = self._pipelined([("recur.get", (jid,)) for jid in wanted[start:start + PAGE]])
            objects += [json.loads(reply) for reply in replies if reply is not None]
        templates: list[Template] = []
        for start in range(0, len(objects), PAGE):
            batch = objects[start:start + PAGE]
            with self.redis.pipeline(transaction=False) as pipe:
                for obj in batch:
                    pipe.zscore(f"ql:q:{obj['queue']}-recur", obj["jid"])
                scores = pipe.execute()
            templates += [_template(obj, score) for obj, score in zip(batch, scores, strict=True)]
        return templates

    def queue_writes(self, pipe: Pipeline, actions: Sequence[Action], now: float) -> list[str]:
        """Buffer the commands of `actions` on a MULTI pipeline; returns their command names."""
        commands: list[str] = []
        for action in actions:
            for command, args in commands_for(action, now):
                self.script(keys=[], args=[command, now, *args], client=pipe)
                commands.append(command)
        return commands

    def _pipelined(self, calls: Sequence[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Run read-only script calls in one round trip."""
        now = self.client.now()
        with self.redis.pipeline(transaction=False) as pipe:
            for command, args in calls:
                self.script(keys=[], args=[command, now, *args], client=pipe)
            replies = pipe.execute(raise_on_error=False)
        return [
            _checked(command, reply) for (command, _), reply in zip(calls, replies, strict=True)
        ]


def commands_for(action: Action, now: float) -> list[tuple[str, tuple[Any, ...]]]:
    """The script commands that carry out one action."""
    declared, found = action.declared, action.found
    if action.kind == "remove":
        return [("unrecur", (action.jid,))]
    if declared is None or action.kind not in ("create", "update"):
        return []
    if action.reschedule:
        # recur rewrites every field and keeps the count; the first run is the next aligned one.
        next_run = declared.every.next_run(now)
        return [("recur", (
            declared.queue, declared.jid, declared.klass, declared.encoded, "interval",
            declared.every.interval, next_run - now, "priority", declared.priority,
            "tags", json.dumps(list(declared.tags)), "retries", declared.retries,
            "backlog", declared.backlog,
        ))]
    calls: list[tuple[str, tuple[Any, ...]]] = []
    pairs: list[Any] = []
    for change in action.changes:
        if change.name == "data":
            pairs += ["data", declared.encoded]
        elif change.name in ("klass", "queue", "priority", "retries", "backlog"):
            pairs += [change.name, getattr(declared, change.name)]
    if pairs:
        calls.append(("recur.update", (declared.jid, *pairs)))
    if found is not None:
        missing = [tag for tag in declared.tags if tag not in found.tags]
        extra = [tag for tag in found.tags if tag not in declared.tags]
        if missing:
            calls.append(("recur.tag", (declared.jid, *missing)))
        if extra:
            calls.append(("recur.untag", (declared.jid, *extra)))
    return calls


def check_replies(commands: Sequence[str], replies: Sequence[Any]) -> None:
    """Raise the first script error of an executed transaction."""
    for command, reply in zip(commands, replies, strict=True):
        _checked(command, reply)


def _checked(command: str, reply: Any) -> Any:
    """A reply, decoded; script errors become the core's exceptions."""
    if isinstance(reply, redis.ResponseError):
        raise translate(command, reply)
    if isinstance(reply, Exception):
        raise reply
    return reply.decode("utf-8") if isinstance(reply, bytes) else reply


def _template(obj: dict[str, Any], score: float | None) -> Template:
    """A Template from a `recur.get` object and its zset score."""
    raw = obj.get("data")
    try:
        return Template(
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
            next_run=None if score is None else float(score),
        )
    except (TypeError, ValueError) as exc:
        raise QlessError(f"recurring job {obj.get('jid')!r} is malformed: {exc}") from exc
