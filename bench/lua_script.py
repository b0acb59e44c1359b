"""Benchmark the qless Lua script against reqless' script and a no-op floor on one redis-server.

Run: python bench/lua_script.py [--jobs N] [--rounds R] [--redis-server PATH] [--profile]

Server-side microseconds per call come from INFO commandstats (cmdstat_evalsha), reset before
each phase; client throughput is measured with a wall clock over the same connection.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/lua_script.py` puts bench/, not the root, on the path
    sys.path.insert(0, str(ROOT))

from tests.redis_harness import RedisServer, find_redis_server  # noqa: E402

OURS_PATH = ROOT / "django_qless" / "core" / "qless.lua"
REQLESS_PIN = "reqless==0.13.3"
REQLESS_WHEEL = "reqless-0.13.3-py3-none-any.whl"
REQLESS_SHA256 = "60ff793f4cbe11e80869e562edee36e1fded84f03946d5935655a68d1fef450b"
REQLESS_MEMBER = "reqless/lua/qless.lua"
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "django_qless-bench"
NOOP_SOURCE = "return 1"
TARGET_RATIO = 0.55
QUEUE, WORKER, KLASS = "bench", "bench-worker", "bench.Job"
PIPELINE = 500
Call = list[str | int | float]  # command, now, then its arguments


@dataclass
class Script:
    """One Lua script under test: its name, source and whether it does real queue work."""

    name: str
    source: str
    real: bool = True
    sha: str = ""


@dataclass
class Clock:
    """Hands out fixed, strictly increasing `now` values so runs never depend on wall time."""

    now: float = 1_700_000_000.0
    step: float = 0.0001

    def tick(self) -> float:
        """Advance and return the next `now`."""
        self.now += self.step
        return round(self.now, 4)


@dataclass
class Results:
    """Per-script samples of every figure, one per round."""

    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    inner: dict[str, dict[str, dict[str, tuple[float, float]]]] = field(default_factory=dict)

    def add(self, script: str, metric: str, value: float) -> None:
        """Record one sample."""
        self.samples.setdefault(script, {}).setdefault(metric, []).append(value)

    def median(self, script: str, metric: str) -> float | None:
        """Median over rounds, or None when the script was not measured."""
        values = self.samples.get(script, {}).get(metric)
        return statistics.median(values) if values else None


def fetch_reqless_source(cache_dir: Path = CACHE_DIR) -> str:
    """Download the pinned reqless wheel once, outside the repo, and read its script."""
    wheel = cache_dir / REQLESS_WHEEL
    if not wheel.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", REQLESS_PIN, "--no-deps", "--quiet",
             "-d", str(cache_dir)],
            check=True,
        )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != REQLESS_SHA256:
        raise RuntimeError(f"{wheel} has sha256 {digest}, expected {REQLESS_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(REQLESS_MEMBER).decode("utf-8")


def evalsha_stats(client: redis.Redis) -> tuple[int, float, dict[str, tuple[int, int]]]:
    """Since the last reset: (evalsha calls, usec/call, {inner command: (calls, usec)})."""
    stats = client.info("commandstats")
    outer = stats.get("cmdstat_evalsha", {"calls": 0, "usec_per_call": 0.0})
    inner = {
        name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
        for name, v in stats.items()
        if name not in ("cmdstat_evalsha", "cmdstat_config|resetstat", "cmdstat_config")
    }
    return int(outer["calls"]), float(outer["usec_per_call"]), inner


def chunks(items: list[Call], size: int) -> Iterator[list[Call]]:
    """Split a list of calls into pipeline-sized slices."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def run_pipelined(client: redis.Redis, sha: str, calls: list[Call]) -> list[object]:
    """Send EVALSHA calls in pipelines of PIPELINE and return all replies in order."""
    replies: list[object] = []
    for part in chunks(calls, PIPELINE):
        pipe = client.pipeline(transaction=False)
        for args in part:
            pipe.evalsha(sha, 0, *args)
        replies.extend(pipe.execute())
    return replies


def jid_for(index: int) -> str:
    """A fixed-width jid, like the 32-hex uuids clients generate."""
    return f"{index:032x}"


def put_calls(jobs: int, clock: Clock) -> list[Call]:
    """Arguments of `jobs` plain puts (no delay, priority or tags)."""
    return [["put", clock.tick(), WORKER, QUEUE, jid_for(i), KLASS, json.dumps({"n": i}), 0]
            for i in range(jobs)]


def popped_jids(reply: object, expected: int | None) -> list[str]:
    """Decode a pop reply and check it carries `expected` jobs (None: any number)."""
    assert isinstance(reply, bytes), f"pop reply is not a JSON string: {reply!r}"
    decoded = json.loads(reply)
    jobs = decoded if isinstance(decoded, list) else []  # cjson encodes an empty list as {}
    assert expected is None or len(jobs) == expected, f"pop gave {len(jobs)} jobs, not {expected}"
    return [job["jid"] for job in jobs]


def measure(client: redis.Redis, results: Results, script: Script, metric: str,
            calls: list[Call]) -> list[object]:
    """Run one phase from reset stats, record server us/call and client calls/s; return replies."""
    client.config_resetstat()
    started = time.perf_counter()
    replies = run_pipelined(client, script.sha, calls)
    elapsed = time.perf_counter() - started
    count, usec, inner = evalsha_stats(client)
    assert count == len(calls), f"{script.name} {metric}: {count} evalsha, sent {len(calls)}"
    results.add(script.name, f"{metric}_us", usec)
    results.add(script.name, f"{metric}_rate", len(calls) / elapsed)
    per_call = {name: (c / count, u / count) for name, (c, u) in inner.items()}
    results.inner.setdefault(script.name, {})[metric] = per_call
    return replies


def server_side_phases(client: redis.Redis, results: Results, script: Script, jobs: int,
                       clock: Clock) -> None:
    """put N, pop N with count 1, complete N: each phase timed on the server."""
    client.flushall()
    puts = measure(client, results, script, "put", put_calls(jobs, clock))
    if script.real:
        assert puts == [jid_for(i).encode() for i in range(jobs)], f"{script.name}: put replies"
    pops = measure(client, results, script, "pop",
                   [["pop", clock.tick(), QUEUE, WORKER, 1] for _ in range(jobs)])
    if script.real:
        jids = [jid for reply in pops for jid in popped_jids(reply, 1)]
        assert sorted(jids) == [jid_for(i) for i in range(jobs)], f"{script.name}: pop lost jobs"
    else:
        jids = [jid_for(i) for i in range(jobs)]
    done = measure(client, results, script, "complete",
                   [["complete", clock.tick(), jid, WORKER, QUEUE, "{}"] for jid in jids])
    if script.real:
        assert set(done) == {b"complete"}, f"{script.name}: complete replies {set(done)}"
    # A command that does almost nothing shows the fixed cost each EVALSHA pays for the script.
    floor = measure(client, results, script, "config",
                    [["config.get", clock.tick(), "heartbeat"] for _ in range(jobs)])
    if script.real:
        assert set(floor) == {60}, f"{script.name}: config.get heartbeat gave {set(floor)}"


def worker_throughput(client: redis.Redis, results: Results, script: Script, jobs: int,
                      batch: int, clock: Clock) -> None:
    """Jobs/s of a worker loop: one pop of `batch` jobs, then their completes in one pipeline."""
    client.flushall()
    run_pipelined(client, script.sha, put_calls(jobs, clock))
    done = 0
    started = time.perf_counter()
    for _ in range(-(-jobs // batch)):
        reply = client.evalsha(script.sha, 0, "pop", clock.tick(), QUEUE, WORKER, batch)
        if script.real:
            jids = popped_jids(reply, min(batch, jobs - done))
        else:
            jids = [jid_for(i) for i in range(done, min(done + batch, jobs))]
        pipe = client.pipeline(transaction=False)
        for jid in jids:
            pipe.evalsha(script.sha, 0, "complete", clock.tick(), jid, WORKER, QUEUE, "{}")
        replies = pipe.execute()
        assert not script.real or set(replies) == {b"complete"}, f"{script.name}: complete"
        done += len(jids)
    elapsed = time.perf_counter() - started
    assert done == jobs, f"{script.name}: worker loop completed {done} of {jobs}"
    results.add(script.name, f"cycle{batch}_rate", jobs / elapsed)


def load_scripts(client: redis.Redis, ours: Path) -> list[Script]:
    """Our script (when built), reqless' and the no-op, each loaded into the server."""
    scripts = []
    if ours.exists():
        scripts.append(Script("ours", ours.read_text(encoding="utf-8")))
    else:
        print(f"note: {ours} does not exist yet; measuring reqless and the floor only")
    scripts.append(Script("reqless", fetch_reqless_source()))
    scripts.append(Script("no-op", NOOP_SOURCE, real=False))
    for script in scripts:
        script.sha = str(client.script_load(script.source))
    return scripts


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("put/s (pipelined)", "put_rate", lambda v: f"{v:,.0f}"),
    ("pop+complete jobs/s, batch 1", "cycle1_rate", lambda v: f"{v:,.0f}"),
    ("pop+complete jobs/s, batch 50", "cycle50_rate", lambda v: f"{v:,.0f}"),
    ("server us/call put", "put_us", lambda v: f"{v:.1f}"),
    ("server us/call pop (count 1)", "pop_us", lambda v: f"{v:.1f}"),
    ("server us/call complete", "complete_us", lambda v: f"{v:.1f}"),
    ("server us put+pop+complete", "cycle_us", lambda v: f"{v:.1f}"),
    ("server us/call config.get (fixed cost)", "config_us", lambda v: f"{v:.1f}"),
]


def add_cycle_totals(results: Results) -> None:
    """Per round, the server-side cost of one put + pop + complete."""
    for metrics in results.samples.values():
        rounds = zip(metrics["put_us"], metrics["pop_us"], metrics["complete_us"], strict=True)
        metrics["cycle_us"] = [put + pop + complete for put, pop, complete in rounds]


def render_table(results: Results, names: list[str]) -> str:
    """A plain-text table of medians with the ours/reqless ratio."""
    header = ["figure (median of rounds)", *names]
    if "ours" in names:
        header.append("ours/reqless")
    lines = [header]
    for label, metric, fmt in ROWS:
        row = [label]
        for name in names:
            value = results.median(name, metric)
            row.append("-" if value is None else fmt(value))
        if "ours" in names:
            ours, theirs = results.median("ours", metric), results.median("reqless", metric)
            row.append(f"{ours / theirs:.2f}x" if ours is not None and theirs else "-")
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        out.append("  ".join(cells))
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def render_profile(results: Results, names: list[str]) -> str:
    """Redis commands issued per EVALSHA and their usec, per script and phase."""
    out = []
    for name in names:
        for metric in ("put", "pop", "complete", "config"):
            inner = results.inner.get(name, {}).get(metric, {})
            total = results.median(name, f"{metric}_us") or 0.0
            in_redis = sum(usec for _, usec in inner.values())
            out.append(f"{name} {metric}: {total:.1f} us/call, {in_redis:.1f} us in redis.call, "
                       f"{total - in_redis:.1f} us in Lua/cjson (last round)")
            for command, (calls, usec) in sorted(inner.items(), key=lambda kv: -kv[1][1]):
                out.append(f"    {command:<22} {calls:6.2f} calls  {usec:6.2f} us")
    return "\n".join(out)


def verdict(results: Results) -> str:
    """PASS/FAIL line for the cycle ratio target."""
    ours, theirs = results.median("ours", "cycle_us"), results.median("reqless", "cycle_us")
    if ours is None or not theirs:
        return "target: not evaluated (our script is not built)"
    ratio = ours / theirs
    mark = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    return (f"{mark}: ours {ours:.1f} us vs reqless {theirs:.1f} us per put+pop+complete "
            f"= {ratio:.2f}x (target <= {TARGET_RATIO:.2f}x)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per phase (20000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--redis-server", default=None, help="redis-server binary")
    parser.add_argument("--ours", type=Path, default=OURS_PATH, help="our built script")
    parser.add_argument("--profile", action="store_true", help="print Redis calls per command")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start a private redis-server, run every round, print the table and the verdict."""
    args = parse_args(argv)
    server = RedisServer(binary=args.redis_server or find_redis_server()).start()
    try:
        client = server.client()
        scripts = load_scripts(client, args.ours)
        version = ".".join(map(str, server.version))
        print(f"redis-server {version} ({server.binary}), {os.cpu_count()} cores, "
              f"{args.jobs} jobs per phase, {args.rounds} rounds, "
              f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
        results, clock = Results(), Clock()
        for round_number in range(1, args.rounds + 1):
            for script in scripts:  # interleaved so background load hits every script alike
                server_side_phases(client, results, script, args.jobs, clock)
                for batch in (1, 50):
                    worker_throughput(client, results, script, args.jobs, batch, clock)
            print(f"round {round_number}/{args.rounds} done", file=sys.stderr)
        add_cycle_totals(results)
        names = [script.name for script in scripts]
        print(render_table(results, names))
        print(verdict(results))
        if args.profile:
            print(render_profile(results, names))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
