"""bench/io_e2e.py's parts that run without the peers: the slow server, the I/O job bodies,
the configurations, the probe for --concurrency and the report's maths."""

from __future__ import annotations

import importlib.util
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
if str(BENCH) not in sys.path:  # the benchmarks import their helpers as the package `e2e`
    sys.path.insert(0, str(BENCH))

from e2e import io_systems  # noqa: E402
from e2e.cpu import descendants, kill_if_same  # noqa: E402
from e2e.io_systems import async_checks, sync_checks  # noqa: E402
from e2e.measure import Result  # noqa: E402
from e2e.report import Summary, same_concurrency, summarise  # noqa: E402
from e2e.slow_http import SlowServer  # noqa: E402

from tests.redis_harness import RedisServer  # noqa: E402

configurations = io_systems.io_systems

APPS = BENCH / "e2e" / "apps"


def load(name: str) -> ModuleType:
    """A module of bench/e2e/apps, loaded from its file (the apps are not a package)."""
    spec = importlib.util.spec_from_file_location(f"iobench_{name}", APPS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def get(url: str) -> tuple[bytes, float]:
    """The body of a GET and the seconds it took."""
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - local http
        return response.read(), time.monotonic() - started


def test_slow_server_answers_after_its_delay_and_many_at_once() -> None:
    """Each GET waits the delay; twenty at once take about one delay, not twenty."""
    with SlowServer(delay=0.2) as server:
        body, took = get(server.url)
        assert body == b"ok\n" and took >= 0.2
        times: list[float] = []
        threads = [threading.Thread(target=lambda: times.append(get(server.url)[1]))
                   for _ in range(20)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert len(times) == 20 and min(times) >= 0.2
        assert time.monotonic() - started < 0.2 * 10  # served together (generous under load)
        assert server.requests == 21
    with pytest.raises(urllib.error.URLError):  # stopped: nothing listens any more
        get(server.url)


@pytest.fixture
def jobbody(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The job bodies, on an empty Redis database."""
    redis_server.client().flushall()
    monkeypatch.setenv("BENCH_REDIS_URL", redis_server.url)
    return load("jobbody")


@pytest.mark.parametrize("kind", ["sleep", "async", "http"])
def test_io_jobs_wait_then_count_themselves(jobbody: ModuleType, redis_server: RedisServer,
                                            monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Every kind waits IO_SECONDS, counts one run, stamps it and records its pickup."""
    assert jobbody.IO_SECONDS == io_systems.IO_SECONDS
    client = redis_server.client(decode_responses=True)
    with SlowServer(jobbody.IO_SECONDS) as server:
        monkeypatch.setenv("BENCH_HTTP_URL", server.url)
        put_at = time.time() - 1.0
        started = time.monotonic()
        jobbody.run_io(kind, put_at)
        assert time.monotonic() - started >= jobbody.IO_SECONDS
        assert server.requests == (1 if kind == "http" else 0)
        assert client.get("bench:count") == "1"
        first, last = float(client.get("bench:first")), float(client.get("bench:last"))
        assert last - first >= jobbody.IO_SECONDS
        [latency] = client.lrange("bench:latency", 0, -1)
        assert 1.0 <= float(latency) < 30.0
        jobbody.run_io(kind, 0.0)  # a drain job: counted, no pickup sample
    assert client.get("bench:count") == "2" and client.llen("bench:latency") == 1


def test_driver_puts_the_io_kind_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """With $BENCH_IO_KIND the driver's two actions put that kind through `put_io`."""
    driver = load("driver")
    calls: list[tuple[str, float]] = []
    module = ModuleType("sys_fake")
    module.put_io = lambda kind, put_at: calls.append((kind, put_at))  # type: ignore[attr-defined]
    module.put_noop = lambda: calls.append(("noop", 0.0))  # type: ignore[attr-defined]
    module.put_latency = lambda at: calls.append(("latency", at))  # type: ignore[attr-defined]
    driver.put(module, 2)
    monkeypatch.setenv("BENCH_IO_KIND", "http")
    driver.put(module, 1)
    driver.latency(module, 1, 0.0)
    assert calls[:3] == [("noop", 0.0), ("noop", 0.0), ("http", 0.0)]
    assert calls[3][0] == "http" and calls[3][1] > 0


def argv(system_worker: object, burst: bool = True) -> list[str]:
    """A worker's command line for a made-up URL."""
    assert callable(system_worker)
    command: list[str] = system_worker("redis://127.0.0.1:1/1", burst)
    return command


def test_configurations_without_concurrency_run_processes_only() -> None:
    """Until qless_worker has --concurrency: 2 x 1 and 32 x 1, labelled so, never passing it."""
    systems = configurations(False)
    ours = {name: s for name, s in systems.items() if (s.peer or s.name) == "qless"}
    assert sorted(ours) == ["qless", "qless_32x1"]
    assert all("no --concurrency" in s.label for s in ours.values())
    assert all("--concurrency" not in argv(s.worker) for s in ours.values())
    assert [ours["qless"].concurrency, ours["qless_32x1"].concurrency] == [2, 32]
    assert argv(ours["qless_32x1"].worker)[5:7] == ["--processes", "32"]


def test_configurations_with_concurrency_and_every_peer() -> None:
    """2 x 16 and 1 x 200 for django_qless; each peer's I/O pools at 32 and 200 slots."""
    systems = configurations(True)
    qless = argv(systems["qless"].worker)
    assert qless[qless.index("--concurrency") + 1] == "16" and "--burst" in qless
    assert "200" in argv(systems["qless_1x200"].worker)
    assert len({s.db for s in systems.values()}) == len(systems) and max(
        s.db for s in systems.values()) <= 15  # a default redis-server has 16 databases
    slots = {(s.peer or s.name, s.concurrency) for s in systems.values()}
    for peer in ("qless", "dramatiq", "huey", "celery"):
        assert {(peer, 32), (peer, 200)} <= slots
    assert ("rq", 32) in slots
    for system in systems.values():
        assert system.ideal_rate == pytest.approx(system.concurrency / 0.05)
        assert system.driver_module == f"sys_{system.peer or system.name}"
    greenlet = argv(systems["huey_greenlet_200"].worker)
    assert greenlet[1].endswith("huey_greenlet.py") and greenlet[-4:] == ["200", "-k",
                                                                          "greenlet", "-q"]
    gevent = argv(systems["celery_gevent_32"].worker)
    assert gevent[gevent.index("-P") + 1] == "gevent" and gevent[gevent.index("-c") + 1] == "32"
    dramatiq = argv(systems["dramatiq_1x200"].worker)
    assert dramatiq[-4:] == ["--processes", "1", "--threads", "200"]


def fake_python(tmp_path: Path, help_text: str) -> str:
    """An executable that prints `help_text` whatever it is asked (a stand-in worker)."""
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\necho '{help_text}'\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_probe_reads_the_workers_help(tmp_path: Path) -> None:
    """--concurrency is passed only when the worker's --help lists it."""
    assert io_systems.supports_concurrency(fake_python(tmp_path, "--concurrency N  jobs"))
    assert not io_systems.supports_concurrency(fake_python(tmp_path, "--processes N"))


def test_probe_agrees_with_the_installed_worker() -> None:
    """On this tree the probe answers what the command's own parser says."""
    from django_qless.management.commands.qless_worker import Command

    parser = Command().create_parser("manage.py", "qless_worker")
    has = "--concurrency" in parser._option_string_actions  # noqa: SLF001
    assert io_systems.supports_concurrency() is has


def row(system: str, rate: float | None, slots: int, peer: str = "", rss: float = 100.0,
        ) -> Summary:
    """A summary with the figures the I/O report reads."""
    return Summary(system=system, label=f"{system} label", put_rate=None, drain_rate=rate,
                   drain_wall_rate=rate, live_rate=None, worker_cpu_ms=None, redis_cpu_ms=None,
                   p50_ms=None, p99_ms=None, samples=0, duplicates=0, peer=peer or system,
                   concurrency=slots, rss_mb=rss,
                   ideal_fraction=None if rate is None else rate * 0.05 / slots)


def test_summary_keeps_rss_and_share_of_the_ideal() -> None:
    """Rounds fold into medians; the slots come from the configuration."""
    results = [Result("qless", drain_rate=r, rss_mb=m, ideal_fraction=f)
               for r, m, f in ((500.0, 90.0, 0.78), (560.0, 110.0, 0.88), (540.0, 95.0, 0.84))]
    summary = summarise("qless", "label", results, concurrency=32)
    assert (summary.drain_rate, summary.rss_mb, summary.ideal_fraction,
            summary.concurrency) == (540.0, 95.0, 0.84, 32)


def test_same_concurrency_divides_by_peers_with_as_many_slots() -> None:
    """Each django_qless shape is compared with the peers of its slot count only."""
    rows = [row("qless", 600.0, 32), row("qless_1x200", 3000.0, 200, "qless"),
            row("dramatiq_2x16", 400.0, 32, "dramatiq"), row("huey_greenlet_200", 2500.0, 200,
                                                             "huey"),
            row("qless_2x1", 40.0, 2, "qless")]
    assert same_concurrency(rows).splitlines() == [
        "django_qless / each peer at the same total concurrency (jobs/s):",
        "  qless label: vs dramatiq_2x16 label 1.50x",
        "  qless_1x200 label: vs huey_greenlet_200 label 1.20x",
        "  qless_2x1 label: vs no peer with 2 slots"]


def test_sync_targets_share_of_ideal_and_dramatiq() -> None:
    """85% of 32 / 0.05 s is 544 jobs/s; at or above dramatiq 2 x 16 passes."""
    passing = sync_checks([row("qless", 550.0, 32), row("dramatiq_2x16", 500.0, 32, "dramatiq")])
    assert passing == [("2 x 16 reaches 85% of the ideal (86%)", True),
                       ("2 x 16 >= 1.0x dramatiq 2 x 16 (1.10x)", True)]
    failing = sync_checks([row("qless", 500.0, 32), row("dramatiq_2x16", 520.0, 32, "dramatiq")])
    assert [ok for _, ok in failing] == [False, False]
    unmeasured = sync_checks([row("qless", 38.0, 2)], concurrency=False)
    assert [ok for _, ok in unmeasured] == [None, None]
    assert all("needs qless_worker --concurrency" in text for text, _ in unmeasured)
    assert sync_checks([row("dramatiq_2x16", 1.0, 32, "dramatiq")]) == []


def test_async_targets_against_the_best_greenlet_pool() -> None:
    """1 x 200 needs 2,000 jobs/s and 1.2x the fastest huey greenlet or Celery gevent pool."""
    rows = [row("qless_1x200", 3000.0, 200, "qless", rss=60.0),
            row("huey_greenlet_200", 2400.0, 200, "huey", rss=45.0),
            row("celery_gevent_200", 2600.0, 200, "celery", rss=70.0),
            row("dramatiq_1x200", 9000.0, 200, "dramatiq")]  # threads: not a greenlet pool
    checks = async_checks(rows)
    assert checks[0] == ("1 x 200 >= 2,000 jobs/s (3,000/s)", True)
    assert checks[1] == ("1 x 200 >= 1.2x the best greenlet pool (1.15x: celery_gevent_200 "
                         "label, worker RSS 70 MB against 60 MB)", False)
    assert [ok for _, ok in async_checks([row("qless", 39.0, 2)], concurrency=False)] == [
        None, None]



def alive(pid: int, started: str) -> bool:
    """Whether the process that started at `started` still runs (not a zombie, not reused)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == started and fields[0] != "Z"


def cmdline(pid: int) -> bytes:
    """A process's argv, NUL-separated; empty once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_sigterm_stops_everything_the_bench_started(tmp_path: Path) -> None:
    """A bench stopped with SIGTERM mid-drain leaves no worker, Redis or other child behind."""
    bench = subprocess.Popen(
        [sys.executable, str(BENCH / "io_e2e.py"), "--only", "qless", "--kinds", "sleep",
         "--jobs", "5000", "--samples", "1"],
        cwd=BENCH.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    tree: list[tuple[int, str]] = []
    try:
        deadline = time.monotonic() + 180
        # The drain's worker (`qless_worker bench ...`), not the `--help` probe before it.
        while not any(b"qless_worker\0bench" in cmdline(pid) for pid, _ in tree):
            assert bench.poll() is None and time.monotonic() < deadline, "no worker started"
            time.sleep(0.2)
            tree = descendants(bench.pid)
        time.sleep(1.0)  # the supervisor forks its worker processes
        tree = descendants(bench.pid)
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=90) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while (left := [pid for pid, started in tree if alive(pid, started)]) and (
                time.monotonic() < deadline):
            time.sleep(0.2)
        assert left == []
    finally:
        bench.kill()
        bench.wait()
        for pid, started in tree:
            kill_if_same(pid, started)
