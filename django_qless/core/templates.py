"""The recurring templates of one qless database: list them, read them, rewrite them atomically.

Writes happen in one MULTI/EXEC under WATCH of every template the caller looked at. Each
script command that changes a template rewrites its hash `ql:r:<jid>` (recur, recur.update,
recur.tag/untag, unrecur, and the count increment of every spawn), so a concurrent writer
makes EXEC fail with `redis.WatchError`; the caller then reads and decides again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import redis
from redis.client import Pipeline

from . import commands, keys, replies
from .commands import Command
from .recurring import Template

if TYPE_CHECKING:
    from .client import Client

#: Jids per `jobs recurring` page and per pipelined batch of reads.
PAGE = 500


class Templates:
    """Every recurring template of the database behind one qless client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.redis = client.redis

    def database_id(self) -> tuple[str, int]:
        """(server run_id, db index): clients with equal ids share one database."""
        db = int(self.redis.connection_pool.connection_kwargs.get("db", 0) or 0)
        try:
            run_id = str(self.redis.info("server").get("run_id", ""))
        except redis.ResponseError:
            # INFO can be denied by ACLs or renamed: then only identical clients count as one.
            run_id = f"client-{id(self.redis)}"
        return run_id, db

    def jids(self) -> list[str]:
        """Jids of every recurring template, from `queues` and `jobs recurring <queue>`."""
        found: list[str] = []
        for counts in self.client.queues():
            offset = 0
            while True:
                page = self.client.existing_queue(counts.name).jobs("recurring", offset, PAGE)
                found += page
                if len(page) < PAGE:
                    break
                offset += PAGE
        return list(dict.fromkeys(found))

    def read(self, jids: Iterable[str]) -> list[Template]:
        """The templates of `jids` with their next run time (missing ones are left out)."""
        wanted = list(dict.fromkeys(jids))
        objects: list[dict[str, Any]] = []
        for start in range(0, len(wanted), PAGE):
            batch = [commands.recur_get(jid) for jid in wanted[start:start + PAGE]]
            objects += [json.loads(reply) for reply in self._pipelined(batch) if reply is not None]
        templates: list[Template] = []
        for start in range(0, len(objects), PAGE):
            batch_objects = objects[start:start + PAGE]
            with self.redis.pipeline(transaction=False) as pipe:
                for obj in batch_objects:
                    pipe.zscore(keys.queue_set(str(obj["queue"]), "recur"), str(obj["jid"]))
                scores = pipe.execute()
            templates += [Template.from_json(obj, score)
                          for obj, score in zip(batch_objects, scores, strict=True)]
        return templates

    @contextlib.contextmanager
    def watching(self) -> Iterator[Watch]:
        """A WATCH on templates, then at most one transaction (see `Watch`)."""
        with self.redis.pipeline() as pipe:
            yield Watch(self.client, pipe)

    def _pipelined(self, batch: Sequence[Command]) -> list[Any]:
        """Run read-only script commands in one round trip; decoded replies."""
        now = self.client.now()
        with self.redis.pipeline(transaction=False) as pipe:
            for command in batch:
                self.client.script.queue_on(pipe, command.name, now, *command.args)
            return checked(batch, pipe.execute(raise_on_error=False))


class Watch:
    """Templates watched on one connection, and the commands then applied in MULTI/EXEC."""

    def __init__(self, client: Client, pipe: Pipeline) -> None:
        self.client = client
        self.pipe = pipe

    def add(self, jids: Iterable[str]) -> None:
        """WATCH the hashes of these templates (a change to one aborts the transaction)."""
        names = [keys.template(jid) for jid in jids]
        if names:
            watch: Callable[..., Any] = self.pipe.watch  # redis-py leaves it unannotated
            watch(*names)

    def apply(self, batch: Sequence[Command], now: float) -> list[Any]:
        """Run `batch` in one MULTI/EXEC at `now`; decoded replies.

        Raises `redis.WatchError` when a watched template changed since `add`, and the
        first command's error (as `replies.decode` types it) when the script refused one.
        """
        self.pipe.multi()
        for command in batch:
            self.client.script.queue_on(self.pipe, command.name, now, *command.args)
        return checked(batch, self.pipe.execute(raise_on_error=False))


def checked(batch: Sequence[Command], raw: Sequence[Any]) -> list[Any]:
    """The decoded replies of `batch`; raises the first error among them."""
    decoded = [replies.decode(command.name, reply)
               for command, reply in zip(batch, raw, strict=True)]
    for reply in decoded:
        if isinstance(reply, Exception):
            raise reply
    return decoded
