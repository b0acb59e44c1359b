"""Load under faults: N jobs through 2 workers, 5% raising, 1% killing their worker process.

    python bench/load_faults.py                 # 100,000 jobs (takes a while: see below)
    python bench/load_faults.py --jobs 5000     # a quick run
    python bench/load_faults.py --json out.json # also write the figures as JSON

The worker runs jobs in its own process, one at a time, so "1% of job processes killed"
means: that job SIGKILLs the `qless_worker` process running it (first execution only),
the fault suite's supervisor restarts the worker within half a second, and qless hands the
job out again once its lease (3 s) and grace period (1 s) have run out. Each kill costs a
worker start-up (about a second of Python and Django on a 2-core machine), so on such a
machine the 1,000 kills of the full run take about 500 worker-seconds on top of the jobs.

Reported: throughput (jobs ended per second, from the first start to the last end),
enqueue rate, Redis `used_memory` before the puts and after the drain, kills, failures,
lost jobs, duplicate executions, and the structure audit of the whole database.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/load_faults.py` puts bench/, not the root, first
    sys.path.insert(0, str(ROOT))

from django_qless.core import Client, script_text  # noqa: E402
from django_qless.core.validation import encode_data  # noqa: E402
from tests.faults import ledger  # noqa: E402
from tests.faults.audit import audit  # noqa: E402
from tests.faults.checks import GRACE, HEARTBEAT, overlaps, pid_of  # noqa: E402
from tests.faults.fleet import FAST, Fleet  # noqa: E402
from tests.redis_harness import RedisServer  # noqa: E402

PIPELINE = 1000
PROGRESS_EVERY = 10.0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a job was lost or the audit found a problem."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fail-rate", type=float, default=0.05)
    parser.add_argument("--kill-rate", type=float, default=0.01)
    parser.add_argument("--ms", type=float, default=0.0, help="sleep per job (milliseconds)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=7200.0, help="give up after (s)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    server = RedisServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="qless-load-faults-") as workdir:
            figures = run(server, Path(workdir), args)
    finally:
        server.stop()
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["lost"] == 0 and figures["audit"] == "clean" else 1


def run(server: RedisServer, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Put the jobs, drain them under faults, and measure."""
    client = Client(redis.Redis.from_url(server.url))
    client.config.put("heartbeat", HEARTBEAT)
    client.config.put("grace-period", GRACE)
    # Keep every completed job, so the audit can account for each one.
    client.config.put("jobs-history-count", args.jobs + 1000)
    memory_before = _used_memory(client)
    plan = _plan(args)
    started = time.monotonic()
    _put_all(client, plan, args.ms)
    put_seconds = time.monotonic() - started
    print(f"put {args.jobs} jobs in {put_seconds:.1f}s", flush=True)
    fleet = Fleet(server.url, workdir, count=args.workers, args=("q", *FAST)).start()
    try:
        ended = _drain(client, args.jobs, time.monotonic() + args.timeout)
    finally:
        fleet.stop()
    memory_after = _used_memory(client)
    live = set(fleet.live_pids())
    report = audit(client.redis, alive=lambda worker: pid_of(worker) in live)
    entries = ledger.read(fleet.ledger_dir)
    starts = ledger.starts(entries)
    executions = sum(len(runs) for runs in starts.values())
    span = _span(entries)
    failed = sum(1 for state, *_ in report.found.values() if state == "failed")
    lost = [jid for jid in plan if report.found.get(jid, ("",))[0] not in ("complete", "failed")]
    return {
        "jobs": args.jobs,
        "workers": args.workers,
        "ended": ended,
        "enqueue_per_s": round(args.jobs / put_seconds),
        "drain_seconds": round(span, 1),
        "throughput_per_s": round(args.jobs / span, 1) if span else None,
        "planned_failures": sum(1 for fail, _ in plan.values() if fail),
        "failed": failed,
        "planned_kills": sum(1 for _, kill in plan.values() if kill),
        "worker_kills": sum(1 for code in fleet.exit_codes.values() if code == -9),
        "restarts": fleet.restarts,
        "lost": len(lost),
        "executions": executions,
        "duplicates": executions - len(starts),
        "overlaps": len(overlaps(entries, fleet.deaths)),
        "redis_memory_before": memory_before,
        "redis_memory_after": memory_after,
        "audit": "clean" if report.clean else report.summary(),
    }


def _plan(args: argparse.Namespace) -> dict[str, tuple[bool, bool]]:
    """jid -> (raises, kills its worker), drawn with a fixed seed."""
    rng = random.Random(args.seed)
    plan = {}
    for n in range(args.jobs):
        draw = rng.random()
        kill = draw < args.kill_rate
        fail = not kill and draw < args.kill_rate + args.fail_rate
        plan[f"load-{n}"] = (fail, kill)
    return plan


def _put_all(client: Client, plan: dict[str, tuple[bool, bool]], ms: float) -> None:
    """Put every job, pipelined (the same script call as `Queue.put`)."""
    script = client.redis.register_script(script_text())
    items = list(plan.items())
    for start in range(0, len(items), PIPELINE):
        pipe = client.redis.pipeline(transaction=False)
        now = client.now()
        for jid, (fail, kill) in items[start:start + PIPELINE]:
            data = encode_data({"args": [], "kwargs": {"ms": ms, "fail": fail, "kill": kill}},
                               client.max_payload_bytes)
            script(keys=[], args=["put", now, client.worker_name, "q", jid, "faults.work",
                                  data, 0, "retries", 5], client=pipe)
        pipe.execute()


def _drain(client: Client, jobs: int, deadline: float) -> int:
    """Wait until every job is complete or failed; returns how many ended."""
    last_report = time.monotonic()
    ended = 0
    while time.monotonic() < deadline:
        failed = sum(int(n) for n in client.failed().values())
        ended = int(client.redis.zcard("ql:completed")) + failed
        if ended >= jobs:
            break
        if time.monotonic() - last_report >= PROGRESS_EVERY:
            last_report = time.monotonic()
            print(f"  {ended}/{jobs} ended", flush=True)
        time.sleep(0.5)
    return ended


def _span(entries: list[ledger.Entry]) -> float:
    """Seconds from the first job start to the last ledger entry."""
    return entries[-1].t - entries[0].t if entries else 0.0


def _used_memory(client: Client) -> str:
    """Redis `used_memory` in MiB, with the number of keys."""
    info = client.redis.info("memory")
    keys = client.redis.dbsize()
    return f"{int(info['used_memory']) / 2**20:.1f} MiB ({keys} keys)"


if __name__ == "__main__":
    sys.exit(main())
