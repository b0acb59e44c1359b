"""What the Sentry and OpenTelemetry integrations cost: the enqueue path and the no-op drain.

Run: python bench/integrations.py [--jobs N] [--rounds R] [--modes absent,sentry,...]

Each set-up of `bench/e2e/apps/bench_integrations.py` in turn, in fresh processes
($BENCH_INTEGRATION): absent (neither initialised), each SDK installed but not sampling,
and each sampling everything, with nothing leaving the machine (the last step drops what
an exporter would send). Per set-up: `bench/enqueue.py` (the client's CPU per put, one
`.enqueue()` at a time and `enqueue_many` in batches, inside a request's span) and
`bench/worker_e2e.py --only qless` (a pre-filled drain of no-op jobs by `qless_worker
--processes 2`: jobs/s and the worker's CPU per job). The set-ups alternate within each
round; each figure is the median of the rounds, then its ratio to "absent".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "e2e" / "apps"))

from bench_integrations import MODES  # noqa: E402 - beside the bench's apps

#: Figures per set-up: (name, unit, where it is read from).
FIGURES = (
    ("enqueue", "client µs/put"),
    ("enqueue_many", "client µs/put"),
    ("drain", "jobs/s"),
    ("worker CPU", "µs/job"),
)


def run_enqueue(mode: str, jobs: int, out: Path) -> dict[str, float]:
    """`bench/enqueue.py` under one set-up: client CPU per put, single and batched."""
    target = out / f"enqueue-{mode}.json"
    subprocess.run([sys.executable, str(BENCH / "enqueue.py"), "--jobs", str(jobs),
                    "--rounds", "1", "--json", str(target)],
                   env={**os.environ, "BENCH_INTEGRATION": mode}, check=True,
                   stdout=subprocess.DEVNULL)
    medians = json.loads(target.read_text(encoding="utf-8"))
    single = next(v for k, v in medians.items() if k.startswith("single"))
    batched = next(v for k, v in medians.items() if k.startswith("enqueue_many"))
    return {"enqueue": single["client CPU us/put"],
            "enqueue_many": batched["client CPU us/put"]}


def run_drain(mode: str, jobs: int, out: Path) -> dict[str, float]:
    """`bench/worker_e2e.py --only qless` under one set-up: drain rate, worker CPU per job."""
    target = out / f"drain-{mode}.json"
    subprocess.run([sys.executable, str(BENCH / "worker_e2e.py"), "--only", "qless",
                    "--jobs", str(jobs), "--rounds", "1", "--samples", "20",
                    "--json", str(target)],
                   env={**os.environ, "BENCH_INTEGRATION": mode}, check=False,
                   stdout=subprocess.DEVNULL)
    [row] = json.loads(target.read_text(encoding="utf-8"))["rows"]
    return {"drain": row["drain_rate"], "worker CPU": row["worker_cpu_ms"] * 1000}


def main() -> int:
    """Run every set-up in turns for the rounds; print medians and ratios to absent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := sorted(set(modes) - set(MODES)):
        sys.exit(f"unknown set-ups: {', '.join(unknown)}")
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="qless-integrations-") as tmp:
        for _ in range(args.rounds):
            for mode in modes:
                figures = run_enqueue(mode, args.jobs, Path(tmp))
                figures.update(run_drain(mode, args.jobs, Path(tmp)))
                samples[mode].append(figures)
    medians = {mode: {name: statistics.median(r[name] for r in rounds)
                      for name, _ in FIGURES} for mode, rounds in samples.items()}
    load = os.getloadavg()
    print(f"{args.jobs:,} jobs, {args.rounds} rounds, load average {load[0]:.2f}")
    print(f"{'set-up':12s}" + "".join(f"{f'{name} {unit}':>28s}" for name, unit in FIGURES))
    for mode, row in medians.items():
        print(f"{mode:12s}" + "".join(f"{row[name]:28,.1f}" for name, _ in FIGURES))
    if "absent" in medians:
        base = medians["absent"]
        print("\nratio to absent (CPU: higher costs more; drain: lower is slower)")
        for mode, row in medians.items():
            print(f"{mode:12s}" + "".join(f"{row[name] / base[name]:28.2f}x"[1:]
                                          for name, _ in FIGURES))
    for mode in modes:
        print(f"  {mode}: {MODES[mode]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
