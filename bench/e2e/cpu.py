"""CPU seconds used by a worker's process tree and by redis-server: a load-insensitive figure.

On a shared two-core machine wall-clock rates move with whatever else runs; CPU per job
moves much less, so the report shows both. Read from /proc (Linux only; None elsewhere).
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import redis

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stats() -> dict[int, list[str]]:
    """Fields after the command of every /proc/<pid>/stat (state ppid pgrp ... utime ...)."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            except OSError:
                continue
            found[int(entry.name)] = stat.rsplit(")", 1)[1].split()
    return found


def _tree(root: int, stats: dict[int, list[str]]) -> list[int]:
    """`root` and its live descendants (workers may move their children to new groups)."""
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            tree.append(pid)
            todo += children.get(pid, [])
    return tree


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, start time) of `root`'s live process tree, root first (empty without /proc)."""
    if not Path("/proc").is_dir():
        return []
    stats = _stats()
    return [(pid, stats[pid][19]) for pid in _tree(root, stats)]


def kill_if_same(pid: int, started: str) -> None:
    """SIGKILL `pid` only if it is still the process that started at `started` (no reuse)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        if stat.rsplit(")", 1)[1].split()[19] == started:
            os.kill(pid, signal.SIGKILL)
    except (OSError, IndexError):
        pass


def tree_cpu(root: int) -> float | None:
    """User + system seconds of `root`'s process tree, with the children it already reaped."""
    if not Path("/proc").is_dir():
        return None
    stats = _stats()
    # utime stime cutime cstime: a reaped child's time moves into its parent's c* fields.
    ticks = sum(int(v) for pid in _tree(root, stats) for v in stats[pid][11:15])
    return ticks / TICKS


def tree_rss(root: int) -> float | None:
    """Resident megabytes of `root`'s live process tree, each process's RSS summed (pages a
    fork shares are counted in every process that maps them, as `ps` and `top` show them)."""
    if not Path("/proc").is_dir():
        return None
    stats = _stats()
    pages = sum(int(stats[pid][21]) for pid in _tree(root, stats))
    return pages * PAGE / 2**20


def redis_cpu(client: redis.Redis) -> float:
    """CPU seconds redis-server has used (main thread where the server reports it)."""
    cpu = client.info("cpu")
    if "used_cpu_user_main_thread" in cpu:
        return float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"])
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


@dataclass
class CpuMark:
    """CPU counters at one instant."""

    worker: float | None
    server: float

    @classmethod
    def take(cls, worker: Reaped, client: redis.Redis) -> CpuMark:
        """Read both counters now (the worker's from its exit status once it has exited)."""
        used = worker.cpu if not worker.alive() else tree_cpu(worker.popen.pid)
        return cls(used, redis_cpu(client))


@dataclass
class Reaped:
    """A worker process reaped with wait4, so its CPU (and its reaped children's) is kept."""

    popen: subprocess.Popen[str]
    cpu: float | None = None

    def alive(self) -> bool:
        """Whether it still runs; reaps it (recording its CPU) when it has exited."""
        if self.popen.returncode is not None:
            return False
        try:
            pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        except ChildProcessError:
            return self.popen.poll() is None
        if pid == 0:
            return True
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        return False
