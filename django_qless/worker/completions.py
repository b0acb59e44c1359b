"""The reports of jobs that end at the same moment (complete, fail, retry), in one round trip.

With `--concurrency N` each slot reports its own job as soon as it ends. A slot whose
report finds no other round trip under way sends it at once, with any others that are
waiting; while one is under way, the reports of the jobs that end meanwhile wait for it
and then go together in the next. Nothing waits to fill a batch: with jobs ending one at
a time, each report is its own round trip, as before.

Each answer goes back to the slot that asked: the script's reply, or the error in place
(a `LockLostError`, a lost connection), so each slot settles its own job. A report may come
with a `received` callback, which the sending thread calls with its answer as soon as the
round trip ends, in the order the reports were sent (the jobs a `complete.pop` brought are
held in pop order that way, whichever slot wakes first). The jobs the event
loop runs itself (`loop_jobs`) are completed many at a time by their finisher thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from ..core import Batch, Client, Command, Job, commands
from .round_trip import run_all

logger = logging.getLogger("django_qless.worker")


@dataclass
class _Asked:
    """One job's report, waiting for its answer."""

    command: Command
    #: Called by the sending thread with the answer, in the order the reports were sent.
    received: Callable[[Any], None] | None = None
    answer: Any = None
    done: bool = False


class Completions:
    """Sends the slot threads' reports, those ready together in one round trip."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.round_trips = 0
        self._changed = threading.Condition()
        self._waiting: list[_Asked] = []
        self._sending = False
        #: The connection the reports go on, kept between round trips (one sender at a
        #: time): a checkout from the pool per round trip costs as much as the packing.
        self._batch = Batch(client)

    def close(self) -> None:
        """Give the kept connection back to the pool (at shutdown, no report under way)."""
        with self._changed:
            self._batch.release()

    def complete(self, job: Job) -> Any:
        """Complete `job`; returns its new state, or the error qless or Redis gave."""
        return self.complete_all([job])[0]

    def complete_all(self, jobs: list[Job]) -> list[Any]:
        """Complete each job (in one round trip, with any other reports waiting); each
        one's new state, or the error qless or Redis gave."""
        name = self.client.worker_name
        answers = self.send_all([commands.complete(job.jid, name, job.queue_name, job.raw_data)
                                 for job in jobs])
        for job, answer in zip(jobs, answers, strict=True):
            if not isinstance(answer, BaseException):
                job.state = str(answer)
        return answers

    def run(self, command: Command) -> Any:
        """`command`'s reply, as `Client.run` gives it: a script or Redis error is raised."""
        answer = self.send(command)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def send(self, command: Command, received: Callable[[Any], None] | None = None) -> Any:
        """`command`'s reply, or the error qless or Redis gave, in place; `received` is
        called with it first, by the thread that read it."""
        return self._send_asked([_Asked(command, received)])[0]

    def send_all(self, commands: list[Command]) -> list[Any]:
        """Each command's reply, or the error qless or Redis gave, in place."""
        return self._send_asked([_Asked(command) for command in commands])

    def _send_asked(self, asks: list[_Asked]) -> list[Any]:
        """Send `asks` with any others waiting, or wait for the round trip under way."""
        with self._changed:
            self._waiting.extend(asks)
            while not all(asked.done for asked in asks):
                if self._sending:
                    self._changed.wait()
                    continue
                self._sending = True
                batch, self._waiting = self._waiting, []
                try:
                    self._changed.release()
                    try:
                        self._send(batch)
                    finally:
                        self._changed.acquire()
                finally:
                    self._sending = False
                    self._changed.notify_all()
        return [asked.answer for asked in asks]

    def _send(self, batch: list[_Asked]) -> None:
        """One round trip for every report in `batch`; each gets its answer."""
        try:
            answers = run_all(self.client, [asked.command for asked in batch], self._batch)
        except (redis.RedisError, OSError) as exc:
            answers = [exc] * len(batch)
        except BaseException as exc:
            self._answer(batch, [exc] * len(batch))
            raise
        self.round_trips += 1
        self._answer(batch, answers)

    def _answer(self, batch: list[_Asked], answers: list[Any]) -> None:
        """Give each report its answer, calling its `received` first, in order."""
        for asked, answer in zip(batch, answers, strict=True):
            if asked.received is not None:
                try:
                    asked.received(answer)
                except Exception:
                    # The other reports' answers must still reach their slots.
                    logger.exception("qless worker %s: could not take a report's answer",
                                     self.client.worker_name)
            asked.answer, asked.done = answer, True
