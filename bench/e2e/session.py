"""One benchmark run shared by worker_e2e.py, tasks_e2e.py and io_e2e.py: rounds, header,
printed report.

The scripts differ in their systems, scenarios, columns and targets; the run around them
(a private redis-server, systems taking turns round by round, the header naming the machine
and the versions, the table, ratios, errors and PASS/FAIL lines) is the same. io_e2e.py runs
several plans (one per job kind) in one run, each with its own table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.redis_harness import RedisServer, find_redis_server

from .measure import SCENARIOS, Bench, Result
from .report import WORKER_COLUMNS, Column, Summary, render_verdict, summarise, table
from .systems import System, versions

#: Checks on the summarised rows: (text, True for PASS, False for FAIL, None not measured).
Checks = list[tuple[str, bool | None]]


@dataclass(frozen=True)
class Plan:
    """What one benchmark script runs and how it reports it."""

    systems: dict[str, System]
    #: Interpreter and distributions whose versions the header prints, per side.
    sides: tuple[tuple[str, str, tuple[str, ...]], ...]
    scenarios: tuple[str, ...] = SCENARIOS
    columns: tuple[Column, ...] = WORKER_COLUMNS
    ratios: Callable[[list[Summary]], str] = lambda rows: ""
    verdict: Callable[[list[Summary]], Checks] = lambda rows: []
    #: Environment added to every worker and driver of this plan (io_e2e.py: the job kind).
    env: tuple[tuple[str, str], ...] = ()


def options(doc: str | None, systems: dict[str, System], *, jobs: int, latency: bool = True,
            more: Callable[[argparse.ArgumentParser], object] | None = None,
            ) -> argparse.Namespace:
    """Parse the command line shared by the benchmark scripts (latency options if they run it;
    `more` adds a script's own)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    if more is not None:
        more(parser)
    parser.add_argument("--jobs", type=int, default=jobs, help="jobs per throughput scenario")
    parser.add_argument("--only", default=",".join(systems),
                        help=f"comma-separated systems among {', '.join(systems)}")
    parser.add_argument("--rounds", type=int, default=1, help="repeat; rates are medians")
    if latency:
        parser.add_argument("--samples", type=int, default=200, help="latency jobs per round")
        parser.add_argument("--spacing", type=float, default=0.02,
                            help="seconds between two latency jobs")
    else:
        parser.set_defaults(samples=0, spacing=0.0)
    parser.add_argument("--redis-server", default=None, help="redis-server binary")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    args.systems = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.systems) - set(systems))
    if unknown:
        parser.error(f"unknown systems: {', '.join(unknown)}")
    return args


def machine() -> str:
    """CPU model and count, for the report."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def run_rounds(plan: Plan, args: argparse.Namespace, port: int, logs: Path) -> list[Summary]:
    """Every round of every selected system (they take turns); one summary per system."""
    results: dict[str, list[Result]] = {name: [] for name in args.systems}
    for round_no in range(1, args.rounds + 1):
        for name in args.systems:
            system = plan.systems[name]
            print(f"[round {round_no}/{args.rounds}] {system.label} ...", file=sys.stderr,
                  flush=True)
            result = Result(name)
            bench = Bench(system, f"redis://127.0.0.1:{port}/{system.db}", args.jobs,
                          args.samples, args.spacing, logs, dict(plan.env))
            bench.run(result, plan.scenarios)
            for error in result.errors:
                print(f"  error: {error}", file=sys.stderr)
            results[name].append(result)
    return [summarise(name, plan.systems[name].label, results[name], plan.systems[name].peer,
                      plan.systems[name].concurrency)
            for name in args.systems]


def run(plan: Plan, args: argparse.Namespace) -> int:
    """Start a private redis-server, run the rounds, print the report; 1 when a target fails."""
    return run_sections([("", plan)], args)


def run_sections(sections: list[tuple[str, Plan]], args: argparse.Namespace) -> int:
    """`run` for several plans in turn on one redis-server, a titled report each."""
    # SIGTERM unwinds like Ctrl-C, so the workers, the HTTP server and Redis are stopped.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    load_before = f"{os.getloadavg()[0]:.2f}"
    server = RedisServer(binary=args.redis_server or find_redis_server()).start()
    logs = Path(tempfile.mkdtemp(prefix="qless-e2e-"))
    try:
        done = [(title, plan, run_rounds(plan, args, server.port, logs))
                for title, plan in sections]
        redis_version = ".".join(map(str, server.version))
    finally:
        server.stop()
    plan = sections[0][1]
    now = datetime.datetime.now(datetime.timezone.utc)
    header = [
        f"date: {now:%Y-%m-%d %H:%M} UTC; machine: {machine()}",
        f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f}",
        f"redis-server {redis_version}; jobs {args.jobs}; rounds {args.rounds}; "
        f"{describe(plan, args)}; logs in {logs}",
    ]
    header += [f"{side}: " + ", ".join(f"{k} {v}" for k, v in versions(python, packages).items())
               for side, python, packages in plan.sides]
    print("\n".join(header))
    rows_out: list[dict[str, object]] = []
    checks: Checks = []
    for title, section_plan, rows in done:
        section_checks = section_plan.verdict(rows)
        print(("\n" + title if title else "") + "\n" + report([], rows, section_plan,
                                                             section_checks))
        rows_out += [{**asdict(row), "section": title} for row in rows]
        checks += [(f"{title}: {text}" if title else text, ok) for text, ok in section_checks]
    if args.json:
        args.json.write_text(json.dumps({"header": header, "rows": rows_out, "targets": checks},
                                        indent=2), encoding="utf-8")
    return 1 if any(ok is False for _, ok in checks) else 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """Leave through SystemExit, running every `finally` that stops what the bench started."""
    raise SystemExit(128 + signum)


def describe(plan: Plan, args: argparse.Namespace) -> str:
    """The scenarios run, for the header."""
    if not {"live_and_latency", "pickup"} & set(plan.scenarios):
        return "scenarios " + ", ".join(plan.scenarios)
    return f"latency {args.samples} samples x {args.spacing * 1000:g} ms apart"


def report(header: list[str], rows: list[Summary], plan: Plan, checks: Checks) -> str:
    """The header, the table, the ratios, every error and the PASS/FAIL lines."""
    out = [*header, "", table(rows, plan.columns)] if header else [table(rows, plan.columns)]
    if compared := plan.ratios(rows):
        out += ["", compared]
    for row in rows:
        out += [f"  {row.label}: {error}" for error in row.errors]
        if row.duplicates:
            out.append(f"  {row.label}: {row.duplicates} jobs ran more than once")
    if checks:
        out += ["", "targets (django_qless):", render_verdict(checks)]
    return "\n".join(out)
