"""`manage.py qless_health`: exit 0 if the named workers were seen by qless recently, else 1.

A worker is "seen" whenever it pops (even from an empty queue) or renews a job's lease:
qless then records the current time as the worker's last-seen time.
An idle worker pops at least every `--poll-interval`, a busy one renews its lease every
heartbeat interval, so a score older than both means the worker is stuck (Redis errors,
a wedged process) or gone. A worker that stopped gracefully removes its own entry.

It also reads the shared qless configuration: unsafe lease settings make every worker
stop popping, so they make the probe fail too. Redis persistence that can lose
acknowledged puts is a warning on stderr (a failure with `QLESS['REQUIRE_DURABLE_REDIS']`).
"""

from __future__ import annotations

import os
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import conf
from ...conf import DEFAULT_ALIAS
from ...connection import get_client
from ...core import Client, QlessError, keys
from ...core.persistence import read_persistence
from .qless_worker import positive_int, positive_seconds

#: Default `--max-age`: above the default poll interval (5 s) and heartbeat interval
#: (a third of the default 60 s lease), with room for a slow Redis.
DEFAULT_MAX_AGE = 90.0


class Command(BaseCommand):
    # A probe runs every few seconds: skip the system checks, which the worker already ran.
    requires_system_checks: list[str] = []
    help = (
        "Health probe: exit 0 when every named qless worker popped or renewed a lease "
        "within --max-age seconds (its last-seen time in qless), else exit 1."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", metavar="worker",
                            help="worker names, as given to qless_worker --worker-name")
        parser.add_argument("--name-env", metavar="VAR",
                            help="also check the worker named by this environment variable "
                                 "(Kubernetes does not expand $(VAR) in exec probes)")
        parser.add_argument("--processes", type=positive_int, metavar="N",
                            help="check NAME-0 ... NAME-<N-1>, the names qless_worker "
                                 "--processes N gives its workers")
        parser.add_argument("--max-age", type=positive_seconds, default=DEFAULT_MAX_AGE,
                            metavar="SECONDS", help="oldest acceptable last-seen time "
                                                    f"(default {DEFAULT_MAX_AGE:g})")
        parser.add_argument("--connection", default=DEFAULT_ALIAS, metavar="ALIAS",
                            help="QLESS connection the workers use (default: default)")

    def handle(self, *args: Any, names: list[str], name_env: str | None,
               processes: int | None, max_age: float, connection: str, **options: Any
               ) -> None:
        """Read the workers' last-seen times; report each; fail if one is missing or old."""
        wanted = _expand(_names(names, name_env), processes)
        try:
            client = get_client(connection)
            scores = client.workers.last_seen(wanted)
            now = client.now()
            problems = client.config.lease_problems() + self._persistence(client)
        except (QlessError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        except redis.RedisError as exc:
            raise CommandError(f"cannot reach Redis: {exc}") from exc
        for name, seen in zip(wanted, scores, strict=True):
            if seen is None:
                problems.append(f"{name}: not in {keys.WORKERS} (not started yet, stopped, "
                                "or forgotten)")
            elif now - seen > max_age:
                problems.append(f"{name}: last seen {now - seen:.0f}s ago (max {max_age:g}s)")
            else:
                self.stdout.write(f"{name}: seen {max(now - seen, 0.0):.1f}s ago")
        if problems:
            raise CommandError("unhealthy: " + "; ".join(problems))

    def _persistence(self, client: Client) -> list[str]:
        """A persistence risk: a problem with REQUIRE_DURABLE_REDIS, else a warning line."""
        try:
            persistence = read_persistence(client.redis)
        except redis.ResponseError as exc:
            self.stderr.write(f"warning: cannot check Redis persistence ({exc})")
            return []
        if persistence.note:
            self.stdout.write(persistence.note)
        if persistence.problem is None:
            return []
        if conf.get_settings().require_durable_redis:
            return [f"{persistence.problem} (QLESS['REQUIRE_DURABLE_REDIS'] is on)"]
        self.stderr.write(f"warning: {persistence.problem}")
        return []


def _names(names: list[str], name_env: str | None) -> list[str]:
    """The names given on the command line, plus the one in `name_env`."""
    found = list(names)
    if name_env is not None:
        value = os.environ.get(name_env, "").strip()
        if not value:
            raise CommandError(f"--name-env: environment variable {name_env} is not set")
        found.append(value)
    if not found:
        raise CommandError("name at least one worker (or use --name-env)")
    return list(dict.fromkeys(found))


def _expand(names: list[str], processes: int | None) -> list[str]:
    """With `processes`, each name stands for the names of a supervisor's workers."""
    if processes is None:
        return names
    return [f"{name}-{slot}" for name in names for slot in range(processes)]
