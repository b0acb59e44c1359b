"""Completions of jobs that end at the same moment, sent in one round trip.

With `--concurrency N` each slot completes its own job as soon as it returns. A slot
whose completion finds no other round trip under way sends it at once, with any others
that are waiting; while one is under way, the completions of the jobs that end meanwhile
wait for it and then go together in the next. Nothing waits to fill a batch: with jobs
ending one at a time, each completion is its own round trip, as before.

Each answer goes back to the slot that asked: its job's state, or the error in place (a
`LockLostError`, a lost connection), so each slot reports its own job.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import redis

from ..core import Client, Job, commands
from .round_trip import run_all


@dataclass
class _Asked:
    """One job's completion, waiting for its answer."""

    job: Job
    answer: Any = None
    done: bool = False


class Completions:
    """Sends completions for the slot threads, those ready together in one round trip."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.round_trips = 0
        self._changed = threading.Condition()
        self._waiting: list[_Asked] = []
        self._sending = False

    def complete(self, job: Job) -> Any:
        """Complete `job`; returns its new state, or the error qless or Redis gave."""
        asked = _Asked(job)
        with self._changed:
            self._waiting.append(asked)
            while not asked.done:
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
        return asked.answer

    def _send(self, batch: list[_Asked]) -> None:
        """One round trip for every completion in `batch`; each gets its answer."""
        name = self.client.worker_name
        try:
            answers = run_all(self.client, [
                commands.complete(asked.job.jid, name, asked.job.queue_name,
                                  asked.job.raw_data) for asked in batch])
        except (redis.RedisError, OSError) as exc:
            answers = [exc] * len(batch)
        except BaseException as exc:
            for asked in batch:
                asked.answer, asked.done = exc, True
            raise
        self.round_trips += 1
        for asked, answer in zip(batch, answers, strict=True):
            if not isinstance(answer, BaseException):
                asked.job.state = str(answer)
            asked.answer, asked.done = answer, True
