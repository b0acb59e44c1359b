"""The systems under test: how to start each worker, where its jobs live, which interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "e2e" / "apps"
REQUIREMENTS = BENCH / "requirements-competitors.txt"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "django_qless-bench"
VENV = CACHE / "venv"
#: Distributions whose versions the report prints, per interpreter.
OUR_PACKAGES = ("django_qless", "Django", "redis", "hiredis")
COMPETITOR_PACKAGES = ("rq", "huey", "celery", "kombu", "dramatiq", "redis", "hiredis")


#: argv of a worker for (url, burst).
WorkerArgv = Callable[[str, bool], list[str]]


class Reset(Protocol):
    """Empties a system's own store before a scenario (beyond its Redis database)."""

    def __call__(self, system: System, env: dict[str, str]) -> None:
        """Leave the system with no jobs, whatever the last scenario left."""


@dataclass(frozen=True)
class System:
    """One job queue: its worker command line and the interpreter its side runs in."""

    name: str
    label: str
    #: Redis database number (each system gets its own; flushed before every scenario).
    db: int
    python: str
    #: argv of the worker for (url, burst); burst is only asked for when `has_burst`.
    worker: WorkerArgv
    has_burst: bool = False
    #: Django settings of the worker and the driver (the Django-based systems read them).
    settings: str = "qless_bench.settings"
    #: Module beside driver.py with put_noop()/put_latency(); `sys_<name>` when empty.
    driver: str = ""
    #: Called before every scenario, after the Redis database is flushed.
    reset: Reset | None = None
    #: The system this is a configuration of (empty: its own name), for best-of ratios.
    peer: str = ""
    #: Jobs it can run at once in all its processes (0: not stated), and the drain rate that
    #: would give with jobs of a known length (None: no ideal), for bench/io_e2e.py.
    concurrency: int = 0
    ideal_rate: float | None = None

    @property
    def driver_module(self) -> str:
        """The module the driver imports to put this system's jobs."""
        return self.driver or f"sys_{self.name}"

    def env(self, url: str) -> dict[str, str]:
        """Environment of this system's worker and driver processes."""
        env = dict(os.environ)
        env.update(
            BENCH_REDIS_URL=url,
            PYTHONPATH=os.pathsep.join([str(APPS), str(ROOT)]),
            DJANGO_SETTINGS_MODULE=self.settings,
            PYTHONUNBUFFERED="1",
        )
        return env


def venv_bin(name: str, venv: Path = VENV) -> str:
    """A console script (or the interpreter) of a competitors' virtualenv."""
    return str(venv / "bin" / name)


def qless_worker(url: str, burst: bool, processes: int = 2, concurrency: int = 0) -> list[str]:
    """`qless_worker` on the bench queue, 2 processes, in the project's environment
    (`--concurrency` only when asked for: workers without it refuse the option)."""
    argv = [sys.executable, "-m", "django", "qless_worker", "bench", "--processes",
            str(processes), "--verbosity", "0"]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    return [*argv, "--burst"] if burst else argv


def _rq(url: str, burst: bool) -> list[str]:
    argv = [venv_bin("rq"), "worker", "-w", "rq.worker.SimpleWorker", "--url", url,
            "--quiet", "bench"]
    return [*argv, "--burst"] if burst else argv


def rq_pool(url: str, burst: bool, processes: int = 2) -> list[str]:
    """`rq worker-pool` with `processes` workers (each forks a work horse per job)."""
    argv = [venv_bin("rq"), "worker-pool", "-n", str(processes), "--url", url, "--quiet",
            "bench"]
    return [*argv, "--burst"] if burst else argv


def huey(url: str, burst: bool, workers: int = 2, kind: str = "thread") -> list[str]:
    """`huey_consumer -k kind -w workers`; greenlets through a launcher that patches first."""
    consumer = ([venv_bin("python"), str(APPS / "huey_greenlet.py")] if kind == "greenlet"
                else [venv_bin("huey_consumer")])
    return [*consumer, "sys_huey.huey", "-w", str(workers), "-k", kind, "-q"]


def celery(url: str, burst: bool, pool: str = "prefork", concurrency: int = 2) -> list[str]:
    """`celery worker -P pool -c concurrency`, no result backend."""
    return [venv_bin("celery"), "-A", "sys_celery", "worker", "-P", pool, "-c",
            str(concurrency), "-l", "WARNING"]


def _dramatiq(url: str, burst: bool) -> list[str]:
    return [venv_bin("dramatiq"), "sys_dramatiq", "--processes", "2", "--threads", "1"]


def dramatiq_threads(url: str, burst: bool, processes: int = 2, threads: int = 8) -> list[str]:
    """dramatiq's default of 8 threads per process (its prefetch follows the thread count)."""
    return [venv_bin("dramatiq"), "sys_dramatiq", "--processes", str(processes), "--threads",
            str(threads)]


SYSTEMS: dict[str, System] = {
    system.name: system
    for system in (
        System("qless", "django_qless (2 processes)", 1, sys.executable, qless_worker,
               has_burst=True),
        System("rq", "RQ SimpleWorker (1 process)", 2, venv_bin("python"), _rq, has_burst=True),
        System("huey", "huey RedisHuey (2 threads)", 3, venv_bin("python"), huey),
        System("celery", "Celery prefork (concurrency 2)", 4, venv_bin("python"), celery),
        System("dramatiq", "dramatiq (2 processes x 1 thread)", 5, venv_bin("python"),
               _dramatiq),
        # Each peer at its best as well as at two workers: the ratios compare both.
        System("rq_pool", "RQ worker-pool (2 processes)", 6, venv_bin("python"), rq_pool,
               has_burst=True, driver="sys_rq", peer="rq"),
        System("huey_processes", "huey RedisHuey (2 processes)", 7, venv_bin("python"),
               partial(huey, kind="process"), driver="sys_huey", peer="huey"),
        System("dramatiq_threads", "dramatiq (2 processes x 8 threads)", 8, venv_bin("python"),
               dramatiq_threads, driver="sys_dramatiq", peer="dramatiq"),
        # Two processes leave a core idle part of the time on 2 cores (each waits on its job's
        # round trip): every queue drains faster with 4, so "at its best" tries 4 as well.
        System("qless_processes_4", "django_qless (4 processes)", 9, sys.executable,
               partial(qless_worker, processes=4), has_burst=True, driver="sys_qless",
               peer="qless"),
        # Several jobs per process (`--concurrency`): no slower than one at a time.
        System("qless_concurrency_16", "django_qless (2 processes x 16)", 12, sys.executable,
               partial(qless_worker, processes=2, concurrency=16), has_burst=True,
               driver="sys_qless", peer="qless"),
        System("huey_processes_4", "huey RedisHuey (4 processes)", 10, venv_bin("python"),
               partial(huey, workers=4, kind="process"), driver="sys_huey", peer="huey"),
        System("dramatiq_processes_4", "dramatiq (4 processes x 8 threads)", 11,
               venv_bin("python"), partial(dramatiq_threads, processes=4), driver="sys_dramatiq",
               peer="dramatiq"),
    )
}


def ensure_venv(requirements: Path = REQUIREMENTS, venv: Path = VENV) -> None:
    """Create a competitors' virtualenv and install its pinned packages when missing."""
    marker = venv / ".requirements"
    wanted = requirements.read_text(encoding="utf-8")
    if marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return
    print(f"installing the competitors into {venv} (once)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([venv_bin("python", venv), "-m", "pip", "install", "--quiet", "-r",
                    str(requirements)], check=True)
    marker.write_text(wanted, encoding="utf-8")


def versions(python: str, packages: tuple[str, ...]) -> dict[str, str]:
    """Installed versions of `packages` as seen by `python`."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try: out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: out[name] = '-'\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([python, "-c", code, *packages], capture_output=True, text=True,
                            check=True)
    parsed: dict[str, str] = json.loads(result.stdout)
    return parsed
