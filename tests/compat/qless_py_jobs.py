"""Job classes for qless-py's workers (qless-py imports them by dotted path, and may reload)."""

from __future__ import annotations

from typing import Any

import qless


class Greeter:
    """qless-py calls the static method named after the queue (`greet`)."""

    @staticmethod
    def greet(job: Any) -> None:
        job.data["greeting"] = "hello " + job.data["name"]
        job.complete()


class Broken:
    """Its `greet` raises, so qless-py fails the job into `greet-ValueError`."""

    @staticmethod
    def greet(job: Any) -> None:
        raise ValueError("no greeting today")


class Flaky:
    """Retried by qless-py's `retry` decorator on ValueError, failed on anything else."""

    @staticmethod
    @qless.retry(ValueError)
    def process(job: Any) -> None:
        if "transient" in job.tags:
            raise ValueError("try again")
        raise KeyError("permanent")
