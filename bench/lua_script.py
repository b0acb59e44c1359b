"""Benchmark the qless Lua script against reqless' script and a no-op floor on one redis-server.

Run: python bench/lua_script.py [--jobs N] [--rounds R] [--redis-server PATH] [--ours PATH]
                                [--profile]

Each script has its own database; they take turns in blocks of calls. Server-side
microseconds per call come from INFO commandstats (cmdstat_evalsha, reset before each block),
beside the main thread's CPU time from INFO cpu; client throughput is wall-clock time.
On Redis 7 our function library (`qless_library.lua` beside the script: the same code,
called by FCALL, which django_qless uses for the per-job commands) runs as "library".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
# Commands the bench itself sends between blocks (6.2 has no subcommand stats).
OUTSIDE_SCRIPTS = ("cmdstat_evalsha", "cmdstat_fcall", "cmdstat_config|resetstat", "cmdstat_config",
                   "cmdstat_info")
BLOCK = 500  # calls per pipeline, and per stats reset when timing
Call = list[str | int | float]  # command, now, then its arguments


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
class Script:
    """One Lua script under test, loaded into the server and given its own database."""

    name: str
    source: str
    client: redis.Redis
    real: bool = True
    sha: str = ""
    clock: Clock = field(default_factory=Clock)
    #: The library's function, called by FCALL instead of EVALSHA of `sha`.
    function: str = ""

    def queue_call(self, pipe: Any, args: Call) -> None:
        """Add one call of this script to a pipeline."""
        if self.function:
            pipe.fcall(self.function, 0, *args)
        else:
            pipe.evalsha(self.sha, 0, *args)

    def call(self, *args: str | int | float) -> Any:
        """One call of this script."""
        if self.function:
            return self.client.fcall(self.function, 0, *args)
        return self.client.evalsha(self.sha, 0, *args)


@dataclass
class Results:
    """Per-script samples of every figure, one per round."""

    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    inner: dict[str, dict[str, dict[str, tuple[float, float]]]] = field(default_factory=dict)

    def add(self, script: str, metric: str, value: float) -> None:
        """Record one sample."""
        self.samples.setdefault(script, {}).setdefault(metric, []).append(value)

    def median(self, script: str, metric: str) -> float | None:
        """Median over rounds, or None when the script was not measured.

        `cycle_us` / `cycle_cpu` are the sums of the put, pop and complete medians.
        """
        if metric.startswith("cycle_") and not metric.endswith("_rate"):
            unit = metric.removeprefix("cycle_")
            parts = [self.median(script, f"{step}_{unit}") for step in ("put", "pop", "complete")]
            return None if any(part is None for part in parts) else sum(p or 0.0 for p in parts)
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


def script_stats(script: Script) -> tuple[int, int, dict[str, tuple[int, int]]]:
    """Since the last reset: (script calls, their usec, {inner command: (calls, usec)})."""
    stats = script.client.info("commandstats")
    kind = "cmdstat_fcall" if script.function else "cmdstat_evalsha"
    outer = stats.get(kind, {"calls": 0, "usec": 0})
    inner = {
        name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
        for name, v in stats.items()
        if name not in OUTSIDE_SCRIPTS
    }
    return int(outer["calls"]), int(outer["usec"]), inner


def main_thread_cpu(client: redis.Redis) -> float:
    """CPU seconds the server's main thread has used (user + system)."""
    cpu = client.info("cpu")
    if "used_cpu_user_main_thread" in cpu:
        return float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"])
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def run_pipelined(script: Script, calls: list[Call]) -> list[object]:
    """Send script calls in pipelines of BLOCK and return all replies in order."""
    replies: list[object] = []
    for start in range(0, len(calls), BLOCK):
        pipe = script.client.pipeline(transaction=False)
        for args in calls[start:start + BLOCK]:
            script.queue_call(pipe, args)
        replies.extend(pipe.execute())
    return replies


def jid_for(index: int) -> str:
    """A fixed-width jid, like the 32-hex uuids clients generate."""
    return f"{index:032x}"


def put_calls(jobs: int, clock: Clock) -> list[Call]:
    """Arguments of `jobs` plain puts (no delay, priority or tags)."""
    return [["put", clock.tick(), WORKER, QUEUE, jid_for(i), KLASS, json.dumps({"n": i}), 0]
            for i in range(jobs)]


def popped_jids(reply: object, expected: int) -> list[str]:
    """Decode a pop reply and check it carries `expected` jobs."""
    assert isinstance(reply, bytes), f"pop reply is not a JSON string: {reply!r}"
    decoded = json.loads(reply)
    jobs = decoded if isinstance(decoded, list) else []  # cjson encodes an empty list as {}
    assert len(jobs) == expected, f"pop gave {len(jobs)} jobs, not {expected}"
    return [job["jid"] for job in jobs]


def interleaved(scripts: list[Script], results: Results, metric: str,
                calls: dict[str, list[Call]]) -> dict[str, list[object]]:
    """Run every script's calls in alternating blocks of BLOCK, stats reset before each block.

    Alternating spreads background load on the machine evenly over the scripts; the figure
    kept is the median of the blocks' usec per call, so a burst of load moves it little.
    Beside it, the main thread's CPU time per call (network and parsing included): unlike
    commandstats' wall clock it does not grow when another process preempts the server.
    """
    replies: dict[str, list[object]] = {script.name: [] for script in scripts}
    per_block: dict[str, list[float]] = {script.name: [] for script in scripts}
    cpu_block: dict[str, list[float]] = {script.name: [] for script in scripts}
    elapsed = dict.fromkeys(replies, 0.0)
    inner: dict[str, dict[str, tuple[int, int]]] = {script.name: {} for script in scripts}
    total = len(calls[scripts[0].name])
    for start in range(0, total, BLOCK):
        for script in scripts:
            part = calls[script.name][start:start + BLOCK]
            script.client.config_resetstat()
            cpu_before = main_thread_cpu(script.client)
            began = time.perf_counter()
            replies[script.name] += run_pipelined(script, part)
            elapsed[script.name] += time.perf_counter() - began
            cpu_block[script.name].append(
                (main_thread_cpu(script.client) - cpu_before) * 1e6 / len(part))
            count, usec, commands = script_stats(script)
            assert count == len(part), f"{script.name} {metric}: {count} calls of {len(part)}"
            per_block[script.name].append(usec / count)
            seen = inner[script.name]
            for command, (n, spent) in commands.items():
                old = seen.get(command, (0, 0))
                seen[command] = (old[0] + n, old[1] + spent)
    for script in scripts:
        results.add(script.name, f"{metric}_us", statistics.median(per_block[script.name]))
        results.add(script.name, f"{metric}_rate", total / elapsed[script.name])
        results.add(script.name, f"{metric}_cpu", statistics.median(cpu_block[script.name]))
        results.inner.setdefault(script.name, {})[metric] = {
            command: (n / total, spent / total)
            for command, (n, spent) in inner[script.name].items()
        }
    return replies


def server_side_phases(scripts: list[Script], results: Results, jobs: int) -> None:
    """put N, pop N with count 1, complete N, config.get N: each phase timed on the server."""
    for script in scripts:
        script.client.flushdb()
    expected_jids = [jid_for(i) for i in range(jobs)]
    puts = interleaved(scripts, results, "put",
                       {s.name: put_calls(jobs, s.clock) for s in scripts})
    pops = interleaved(scripts, results, "pop", {
        s.name: [["pop", s.clock.tick(), QUEUE, WORKER, 1] for _ in range(jobs)] for s in scripts
    })
    completes: dict[str, list[Call]] = {}
    for script in scripts:
        jids = expected_jids
        if script.real:
            assert puts[script.name] == [jid.encode() for jid in jids], f"{script.name}: put"
            jids = [jid for reply in pops[script.name] for jid in popped_jids(reply, 1)]
            assert sorted(jids) == expected_jids, f"{script.name}: pop lost jobs"
        completes[script.name] = [["complete", script.clock.tick(), jid, WORKER, QUEUE, "{}"]
                                  for jid in jids]
    done = interleaved(scripts, results, "complete", completes)
    # A command that does almost nothing shows the fixed cost each EVALSHA pays for the script.
    floor = interleaved(scripts, results, "config", {
        s.name: [["config.get", s.clock.tick(), "heartbeat"] for _ in range(jobs)] for s in scripts
    })
    for script in scripts:
        if script.real:
            assert set(done[script.name]) == {b"complete"}, f"{script.name}: complete replies"
            assert set(floor[script.name]) == {60}, f"{script.name}: config.get heartbeat"


def worker_step(script: Script, batch: int, done: int, jobs: int) -> int:
    """One worker iteration: pop `batch` jobs, complete them in one pipeline; returns the count."""
    reply = script.call("pop", script.clock.tick(), QUEUE, WORKER, batch)
    wanted = min(batch, jobs - done)
    jids = popped_jids(reply, wanted) if script.real else [jid_for(done + i) for i in range(wanted)]
    pipe = script.client.pipeline(transaction=False)
    for jid in jids:
        script.queue_call(pipe, ["complete", script.clock.tick(), jid, WORKER, QUEUE, "{}"])
    replies = pipe.execute()
    assert not script.real or set(replies) == {b"complete"}, f"{script.name}: complete replies"
    return len(jids)


def worker_throughput(scripts: list[Script], results: Results, jobs: int, batch: int) -> None:
    """Jobs/s of a worker loop per script, the scripts taking turns iteration by iteration."""
    for script in scripts:
        script.client.flushdb()
        run_pipelined(script, put_calls(jobs, script.clock))
    done = dict.fromkeys((s.name for s in scripts), 0)
    elapsed = dict.fromkeys(done, 0.0)
    for _ in range(-(-jobs // batch)):
        for script in scripts:
            began = time.perf_counter()
            done[script.name] += worker_step(script, batch, done[script.name], jobs)
            elapsed[script.name] += time.perf_counter() - began
    for script in scripts:
        assert done[script.name] == jobs, f"{script.name}: worker loop did {done[script.name]}"
        results.add(script.name, f"cycle{batch}_rate", jobs / elapsed[script.name])


def load_scripts(server: RedisServer, ours: Path) -> list[Script]:
    """Our script (when built), our library (on Redis 7), reqless' and the no-op, each loaded,
    each on its own database."""
    sources = []
    if ours.exists():
        sources.append(("ours", ours.read_text(encoding="utf-8"), True))
    else:
        print(f"note: {ours} does not exist yet; measuring reqless and the floor only")
    library = ours.with_name("qless_library.lua")
    if library.exists() and server.version >= (7,):
        sources.append(("library", library.read_text(encoding="utf-8"), True))
    sources.append(("reqless", fetch_reqless_source(), True))
    sources.append(("no-op", NOOP_SOURCE, False))
    scripts = []
    for db, (name, source, real) in enumerate(sources):
        client = server.client(db=db)
        if name == "library":
            loaded = client.function_load(source, replace=True)
            function = loaded.decode() if isinstance(loaded, bytes) else str(loaded)
            scripts.append(Script(name, source, client, real, function=function))
        else:
            scripts.append(Script(name, source, client, real, str(client.script_load(source))))
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
    ("main-thread CPU us put+pop+complete", "cycle_cpu", lambda v: f"{v:.1f}"),
]


def render_table(results: Results, names: list[str]) -> str:
    """A plain-text table of medians with the ours/reqless ratio."""
    header = ["figure (median of rounds)", *names]
    compared = [name for name in ("ours", "library") if name in names]
    header += [f"{name}/reqless" for name in compared]
    lines = [header]
    for label, metric, fmt in ROWS:
        row = [label]
        for name in names:
            value = results.median(name, metric)
            row.append("-" if value is None else fmt(value))
        theirs = results.median("reqless", metric)
        for name in compared:
            ours = results.median(name, metric)
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
                       f"{total - in_redis:.1f} us in Lua/cjson")
            for command, (calls, usec) in sorted(inner.items(), key=lambda kv: -kv[1][1]):
                out.append(f"    {command:<22} {calls:6.2f} calls  {usec:6.2f} us")
    return "\n".join(out)


def verdict(results: Results) -> str:
    """PASS/FAIL line for the cycle ratio target, by commandstats and by main-thread CPU."""
    ours, theirs = results.median("ours", "cycle_us"), results.median("reqless", "cycle_us")
    ours_cpu = results.median("ours", "cycle_cpu")
    theirs_cpu = results.median("reqless", "cycle_cpu")
    if ours is None or not theirs or ours_cpu is None or not theirs_cpu:
        return "target: not evaluated (our script is not built)"
    ratio, cpu_ratio = ours / theirs, ours_cpu / theirs_cpu
    # Both must pass: under load commandstats' wall clock favours the shorter script.
    mark = "PASS" if max(ratio, cpu_ratio) <= TARGET_RATIO else "FAIL"
    return (f"{mark}: put+pop+complete ours/reqless = {ratio:.2f}x by commandstats "
            f"({ours:.1f} vs {theirs:.1f} us), {cpu_ratio:.2f}x by main-thread CPU "
            f"(target <= {TARGET_RATIO:.2f}x)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per phase (20000)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, medians kept (1)")
    parser.add_argument("--redis-server", default=None, help="redis-server binary")
    parser.add_argument("--ours", type=Path, default=OURS_PATH, help="our built script")
    parser.add_argument("--profile", action="store_true", help="print Redis calls per command")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start a private redis-server, run every round, print the table and the verdict."""
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the finally below still stops the redis-server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = RedisServer(binary=args.redis_server or find_redis_server()).start()
    try:
        scripts = load_scripts(server, args.ours)
        version = ".".join(map(str, server.version))
        print(f"redis-server {version} ({server.binary}), {os.cpu_count()} cores, "
              f"{args.jobs} jobs per phase, {args.rounds} round(s), "
              f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
        results = Results()
        for round_number in range(1, args.rounds + 1):
            server_side_phases(scripts, results, args.jobs)
            for batch in (1, 50):
                worker_throughput(scripts, results, args.jobs, batch)
            print(f"round {round_number}/{args.rounds} done", file=sys.stderr)
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
