"""The reports of jobs that end at the same moment (complete, fail, retry), in one round trip.

With `--concurrency N` each slot reports its own job as soon as it ends, on one connection
the process keeps for its reports. One thread at a time uses it: it writes every report
waiting (its own and those of the jobs that ended meanwhile) in one packet, then reads
answers, in order, until its own have come. Nothing waits to fill a batch: with jobs
ending one at a time, each report is its own round trip, as before.

A slot that already holds its next job `post`s its completion instead: the report is
written (or left for the thread using the connection to write) and the slot goes on to
its next job; the answer is read by whichever thread comes next (`collect` reads those
already here without waiting) and the slot takes it with `answer` once that job ends, as
the serial worker handles the completion it sent ahead (`fetcher`).

Each answer goes back to the slot that asked: the script's reply, or the error in place
(a `LockLostError`, a lost connection), so each slot settles its own job. A report may come
with a `received` callback, which the reading thread calls with its answer, in the order
the reports were written (the jobs a `complete.pop` brought are held in pop order that
way, whichever slot wakes first). An answer saying Redis lacks the script is not given to
`received`: the slot that asked runs its command again the plain way (which loads the
script) and calls `received` itself. The jobs the event loop runs itself (`loop_jobs`) are
completed many at a time by their finisher thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis

from ..core import Batch, Client, Command, Job, Reply, ScriptError, ScriptNotLoadedError, commands

logger = logging.getLogger("django_qless.worker")


@dataclass
class Asked:
    """One job's report, waiting for its answer."""

    command: Command
    #: Called by the reading thread with the answer, in the order the reports were written.
    received: Callable[[Any], None] | None = None
    answer: Any = None
    done: bool = False


class Completions:
    """Sends the slot threads' reports, those ready together in one round trip."""

    def __init__(self, client: Client) -> None:
        self.client = client
        #: Packets of reports written.
        self.round_trips = 0
        self._changed = threading.Condition()
        #: Reports not written yet, oldest first.
        self._waiting: list[Asked] = []
        #: True while a thread writes or reads on the connection.
        self._busy = False
        #: The connection the reports go on, kept between round trips (one thread at a
        #: time): a checkout from the pool per round trip costs as much as the packing.
        self._batch = Batch(client)

    @property
    def owed(self) -> int:
        """Reports sent or waiting to be, whose answers are not read yet."""
        with self._changed:
            return len(self._waiting) + self._batch.waiting

    def close(self) -> None:
        """Read every answer still owed and give the kept connection back to the pool (at
        shutdown, no report under way)."""
        with self._changed:
            try:
                self._batch.release()
            except (redis.RedisError, OSError) as exc:
                logger.warning("qless worker %s: connection lost with answers owed (%s)",
                               self.client.worker_name, exc)

    @property
    def holding(self) -> bool:
        """True while a connection is kept for the reports."""
        return self._batch.holding

    def release_idle(self) -> None:
        """Give the kept connection back to the pool if no report is under way or owed (the
        worker goes idle: a connection kept through a network fault may be half-open)."""
        with self._changed:
            if self._busy or self._waiting or self._batch.waiting:
                return
            try:
                self._batch.release()
            except (redis.RedisError, OSError):
                pass  # nothing was owed on it: nothing is lost with it

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
        return self.answer(self.post(command, received))

    def send_all(self, commands: list[Command]) -> list[Any]:
        """Each command's reply, or the error qless or Redis gave, in place."""
        asks = [Asked(command) for command in commands]
        self._enqueue(asks)
        return [self.answer(asked) for asked in asks]

    def post(self, command: Command, received: Callable[[Any], None] | None = None) -> Asked:
        """Send `command` without waiting for its answer (`answer` gives it)."""
        asked = Asked(command, received)
        self._enqueue([asked])
        return asked

    def answer(self, asked: Asked) -> Any:
        """The answer to a report: read now if no thread has read it yet."""
        self._use(lambda: asked.done)
        if isinstance(asked.answer, ScriptNotLoadedError):
            asked.answer = self._plain(asked.command)
            self._receive(asked, asked.answer)
        return asked.answer

    def wait_for(self, condition: Callable[[], bool]) -> None:
        """Read answers, in order, until `condition()` holds or none is owed."""
        self._use(lambda: condition() or not self.owed)

    def collect(self) -> None:
        """Read the answers already here, without waiting (while no other thread is on
        the connection): the jobs their pops brought are held from now on."""
        with self._changed:
            if self._busy or not self._batch.waiting:
                return
            self._busy = True
        try:
            self._read(wait=False)
        finally:
            self._leave()

    def _enqueue(self, asks: list[Asked]) -> None:
        """Write `asks` now, or leave them to the thread on the connection, which writes
        them before it leaves it."""
        with self._changed:
            self._waiting.extend(asks)
            if self._busy:
                return
            self._busy = True
        self._leave()

    def _use(self, done: Callable[[], bool]) -> None:
        """Read answers until `done()`, waiting for the thread on the connection, if any."""
        with self._changed:
            while not done():
                if self._busy:
                    self._changed.wait()
                    continue
                self._busy = True
                self._changed.release()
                try:
                    self._read(wait=True, until=done)
                finally:
                    self._changed.acquire()
                    self._write_waiting()
                    self._busy = False
                    self._changed.notify_all()

    def _leave(self) -> None:
        """Write the reports waiting and let the next thread on the connection."""
        with self._changed:
            try:
                self._write_waiting()
            finally:
                self._busy = False
                self._changed.notify_all()

    def _write_waiting(self) -> None:
        """Write every waiting report in one packet (by the thread on the connection, with
        the condition held: a report posted meanwhile must not be left unwritten)."""
        while self._waiting:
            asks, self._waiting = self._waiting, []
            try:
                self._batch.send([asked.command for asked in asks],
                                 [Reply(partial(self._receive, asked)) for asked in asks])
            except BaseException as exc:
                # Not written (a bad argument, an interruption): each report has its answer.
                for asked in asks:
                    if not asked.done:
                        self._receive(asked, exc)
                if not isinstance(exc, Exception):
                    raise
            self.round_trips += 1

    def _read(self, *, wait: bool, until: Callable[[], bool] | None = None) -> None:
        """Read answers on the connection (a lost one answers every report still owed)."""
        try:
            self._batch.read(wait=wait, until=until)
        except (redis.RedisError, OSError):
            pass  # every report owed an answer has this error as its answer

    def _receive(self, asked: Asked, answer: Any) -> None:
        """Give a report its answer, calling its `received` first."""
        if asked.received is not None and not isinstance(answer, ScriptNotLoadedError):
            try:
                asked.received(answer)
            except Exception:
                # The other reports' answers must still reach their slots.
                logger.exception("qless worker %s: could not take a report's answer",
                                 self.client.worker_name)
        asked.answer, asked.done = answer, True

    def _plain(self, command: Command) -> Any:
        """`command` the plain way, which loads the script again; its reply or error."""
        try:
            return self.client.run(command)
        except (ScriptError, redis.RedisError, OSError) as exc:
            return exc
