"""The end-to-end benchmarks' shared parts: options, checks, ratios, tables, Tasks systems."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
if str(BENCH) not in sys.path:  # the benchmarks import their helpers as the package `e2e`
    sys.path.insert(0, str(BENCH))

from e2e import tasks_systems  # noqa: E402
from e2e.report import Summary, best_ratios, drain_checks, ratios, table  # noqa: E402
from e2e.session import Plan, options, report  # noqa: E402
from e2e.systems import SYSTEMS  # noqa: E402


def row(system: str, drain: float | None, put: float | None = 1000.0) -> Summary:
    """A summary with only the throughput figures the checks read."""
    return Summary(system=system, label=f"{system} label", put_rate=put, drain_rate=drain,
                   drain_wall_rate=drain, live_rate=None, worker_cpu_ms=0.2,
                   redis_cpu_ms=0.1, p50_ms=None, p99_ms=None, samples=0, duplicates=0)


def test_drain_checks_pass_fail_and_unmeasured() -> None:
    """Each minimum is judged on the drain ratio; a missing figure is neither PASS nor FAIL."""
    rows = [row("qless", 1000.0), row("tasks_db", 100.0), row("tasks_rq", 400.0)]
    checks = drain_checks(rows, "qless", (("tasks_db", 5.0), ("tasks_rq", 3.0), ("x", 1.0)))
    assert checks == [("drain >= 5.0x tasks_db (10.00x)", True),
                      ("drain >= 3.0x tasks_rq (2.50x)", False),
                      ("drain >= 1.0x x (-)", None)]
    assert drain_checks([row("tasks_db", 1.0)], "qless", tasks_systems.MINIMUMS) == []


def test_ratios_name_the_figures_asked_for() -> None:
    """The Tasks bench compares enqueue and drain, not the worker bench's live rate."""
    rows = [row("qless", 1000.0, put=2000.0), row("tasks_db", 250.0, put=100.0)]
    text = ratios(rows, figures=(("enqueue", "put_rate"), ("drain", "drain_rate")))
    assert text.splitlines()[1] == "  vs tasks_db label: enqueue 20.00x, drain 4.00x"


def test_table_writes_the_chosen_columns() -> None:
    """Columns are (header, cell) pairs; the default stays the worker bench's eight."""
    rows = [row("qless", 1234.0)]
    custom = table(rows, (("drain/s", lambda r: f"{r.drain_rate:,.0f}"),))
    assert custom.splitlines()[0].split() == ["system", "drain/s"]
    assert custom.splitlines()[2].endswith("1,234")
    assert "put-while-draining/s" in table(rows).splitlines()[0]


def test_report_lists_errors_and_targets() -> None:
    """Errors of a system and the PASS/FAIL lines follow the table."""
    broken = row("tasks_rq", None)
    broken.errors.append("drain: worker exited")
    plan = Plan(tasks_systems.SYSTEMS, ())
    text = report(["header"], [row("qless", 10.0), broken], plan,
                  [("drain >= 3.0x tasks_rq (-)", None)])
    assert "  tasks_rq label: drain: worker exited" in text
    assert text.endswith("  n/a   drain >= 3.0x tasks_rq (-)")


def test_options_without_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Tasks bench has no latency options but the bench still gets their values."""
    monkeypatch.setattr(sys, "argv", ["tasks_e2e.py", "--only", "qless,tasks_rq"])
    args = options("doc", tasks_systems.SYSTEMS, jobs=5000, latency=False)
    assert (args.jobs, args.systems, args.samples, args.rounds) == (5000, ["qless", "tasks_rq"],
                                                                   0, 1)
    monkeypatch.setattr(sys, "argv", ["worker_e2e.py"])
    args = options("doc", SYSTEMS, jobs=20000)
    assert (args.samples, args.spacing, args.systems) == (200, 0.02, list(SYSTEMS))


def test_options_refuse_unknown_systems(monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt system name stops the run before anything starts."""
    monkeypatch.setattr(sys, "argv", ["tasks_e2e.py", "--only", "qless,celery"])
    with pytest.raises(SystemExit):
        options("doc", tasks_systems.SYSTEMS, jobs=5000, latency=False)


def test_tasks_systems_share_driver_and_stop_when_empty() -> None:
    """Every Tasks system enqueues through one driver module and its worker exits when done."""
    systems = tasks_systems.SYSTEMS
    assert {s.driver_module for s in systems.values()} == {"sys_tasks"}
    assert {s.settings for s in systems.values()} == {
        "tasks_bench.settings_qless", "tasks_bench.settings_db", "tasks_bench.settings_rq"}
    url = "redis://127.0.0.1:1/1"
    assert systems["qless"].worker(url, True)[-1] == "--burst"
    assert systems["tasks_db"].worker(url, True)[-1] == "--batch"
    assert systems["tasks_rq"].worker(url, True)[-1] == "--burst"
    assert "--batch" not in systems["tasks_db"].worker(url, False)
    assert systems["tasks_db"].reset is not None
    assert SYSTEMS["rq"].driver_module == "sys_rq"


def test_best_ratios_compare_with_each_peers_best_configuration() -> None:
    """Each figure is divided by the fastest configuration of each peer, named in the line."""
    threads = row("huey", 1000.0)
    processes = row("huey_processes", 2000.0)
    processes.peer = threads.peer = "huey"
    lone = row("rq", 100.0)
    lone.peer = "rq"
    text = best_ratios([row("qless", 3000.0), threads, processes, lone],
                       figures=(("drain", "drain_rate"),))
    assert text.splitlines()[1:] == ["  vs huey: drain 1.50x (best: huey_processes label)",
                                     "  vs rq: drain 30.00x (best: rq label)"]
    assert best_ratios([row("qless", 1.0), lone]) == ""  # one configuration each: see ratios()


def test_best_ratios_also_compare_our_best_with_each_peers_best() -> None:
    """With django_qless in several configurations, a second block divides the best of ours
    by the best of theirs, naming both; the first stays our reference configuration's."""
    four = row("qless_processes_4", 4000.0)
    four.peer = "qless"
    huey = row("huey", 2000.0)
    huey_four = row("huey_processes_4", 3200.0)
    huey.peer = huey_four.peer = "huey"
    rows = [row("qless", 3000.0), four, huey, huey_four]
    lines = best_ratios(rows, figures=(("drain", "drain_rate"),)).splitlines()
    assert lines[1] == "  vs huey: drain 0.94x (best: huey_processes_4 label)"
    assert lines[2] == "django_qless at its best / each peer at its best (per figure):"
    assert lines[3] == ("  vs huey: drain 1.25x (best: qless_processes_4 label / "
                        "huey_processes_4 label)")
    # Our other configuration is not a peer of ours.
    assert "vs qless" not in best_ratios(rows) and "qless_processes_4" not in ratios(rows)


def test_worker_bench_runs_each_peer_at_its_best_and_at_two_workers() -> None:
    """huey in threads and processes, dramatiq with 1 and 8 threads, RQ alone and pooled; huey,
    dramatiq and django_qless with 4 processes as well, and django_qless with 2 x 16 slots
    (several jobs per process must be no slower than one)."""
    peers: dict[str, list[str]] = {}
    for system in SYSTEMS.values():
        peers.setdefault(system.peer or system.name, []).append(system.label)
    assert len(peers["huey"]) == 3 and len(peers["dramatiq"]) == 3 and len(peers["rq"]) == 2
    assert peers["qless"] == ["django_qless (2 processes)", "django_qless (4 processes)",
                              "django_qless (2 processes x 16)"]
    assert len({system.db for system in SYSTEMS.values()}) == len(SYSTEMS)
