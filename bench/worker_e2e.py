"""End-to-end worker benchmark: django_qless's `qless_worker` beside RQ, huey, Celery, dramatiq.

Run: python bench/worker_e2e.py [--jobs N] [--only qless,huey,...] [--rounds R]

One private redis-server serves every system (one database each, flushed before each
scenario). Per system: (1) drain: N no-op jobs are put first, then the worker is started and
timed until every job ran; (2) put-while-draining: a producer process puts N jobs one call
at a time into an idle, running worker; (3) pickup latency: latency jobs put one at a time,
SPACING apart, each recording `start - put`. The competitors run from their own virtualenv
(created on first use from bench/requirements-competitors.txt); they are never dependencies
of the project. Exit status 1 when django_qless misses a target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for path in (BENCH, ROOT):  # e2e/ lives beside this file; tests/ (the Redis harness) at the root
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from e2e.measure import Bench, Result  # noqa: E402
from e2e.report import Summary, ratios, render_verdict, summarise, table, verdict  # noqa: E402
from e2e.systems import (  # noqa: E402
    COMPETITOR_PACKAGES,
    OUR_PACKAGES,
    SYSTEMS,
    ensure_venv,
    venv_bin,
    versions,
)

from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per throughput scenario")
    parser.add_argument("--only", default=",".join(SYSTEMS),
                        help=f"comma-separated systems among {', '.join(SYSTEMS)}")
    parser.add_argument("--rounds", type=int, default=1, help="repeat; rates are medians")
    parser.add_argument("--samples", type=int, default=200, help="latency jobs per round")
    parser.add_argument("--spacing", type=float, default=0.02,
                        help="seconds between two latency jobs")
    parser.add_argument("--redis-server", default=None, help="redis-server binary")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    args.systems = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.systems) - set(SYSTEMS))
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


def run(args: argparse.Namespace, server: RedisServer, logs: Path) -> list[Summary]:
    """Every round of every selected system; returns one summary per system."""
    results: dict[str, list[Result]] = {name: [] for name in args.systems}
    for round_no in range(1, args.rounds + 1):
        for name in args.systems:
            system = SYSTEMS[name]
            print(f"[round {round_no}/{args.rounds}] {system.label} ...", file=sys.stderr,
                  flush=True)
            result = Result(name)
            bench = Bench(system, f"redis://127.0.0.1:{server.port}/{system.db}", args.jobs,
                          args.samples, args.spacing, logs)
            bench.run(result)
            for error in result.errors:
                print(f"  error: {error}", file=sys.stderr)
            results[name].append(result)
    return [summarise(name, SYSTEMS[name].label, results[name]) for name in args.systems]


def main() -> int:
    """Run the benchmark and print the table, the ratios and the verdict."""
    args = parse_args()
    competitors = [name for name in args.systems if name != "qless"]
    if competitors:
        ensure_venv()
    load_before = f"{os.getloadavg()[0]:.2f}"
    server = RedisServer(binary=args.redis_server or find_redis_server()).start()
    logs = Path(tempfile.mkdtemp(prefix="qless-e2e-"))
    try:
        rows = run(args, server, logs)
        redis_version = ".".join(map(str, server.version))
    finally:
        server.stop()
    header = [
        f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; machine: {machine()}",
        f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f}",
        f"redis-server {redis_version}; jobs {args.jobs}; rounds {args.rounds}; latency "
        f"{args.samples} samples x {args.spacing * 1000:g} ms apart; logs in {logs}",
        "ours: " + ", ".join(f"{k} {v}" for k, v in versions(sys.executable, OUR_PACKAGES)
                             .items()),
    ]
    if competitors:
        found = versions(venv_bin("python"), COMPETITOR_PACKAGES)
        header.append("competitors: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    checks = verdict(rows)
    print("\n".join(header))
    print()
    print(table(rows))
    if compared := ratios(rows):
        print()
        print(compared)
    for row in rows:
        for error in row.errors:
            print(f"  {row.label}: {error}")
        if row.duplicates:
            print(f"  {row.label}: {row.duplicates} jobs ran more than once")
    if checks:
        print()
        print("targets (django_qless):")
        print(render_verdict(checks))
    if args.json:
        args.json.write_text(json.dumps({"header": header, "rows": [asdict(r) for r in rows],
                                         "targets": checks}, indent=2), encoding="utf-8")
    return 1 if any(ok is False for _, ok in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
