"""Summarise rounds per system, print the table, the ratios and the verdict on the targets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .measure import Result, median, percentile

#: The targets of the issue: drain >= 1.0x huey and >= 5x RQ; idle pickup p50/p99 in ms.
MIN_VS_HUEY = 1.0
MIN_VS_RQ = 5.0
MAX_P50_MS = 5.0
MAX_P99_MS = 50.0


@dataclass
class Summary:
    """Medians over the rounds of one system (latency percentiles over all samples)."""

    system: str
    label: str
    put_rate: float | None
    drain_rate: float | None
    drain_wall_rate: float | None
    live_rate: float | None
    worker_cpu_ms: float | None
    redis_cpu_ms: float | None
    p50_ms: float | None
    p99_ms: float | None
    samples: int
    duplicates: int
    errors: list[str] = field(default_factory=list)
    #: Per put of the pre-fill: producer CPU and Redis CPU (µs); Redis bytes per queued job.
    put_client_us: float | None = None
    put_redis_us: float | None = None
    bytes_per_job: float | None = None
    #: The system this configuration runs (huey in threads or processes: "huey").
    peer: str = ""
    #: Jobs the configuration runs at once (0: not stated); worker RSS; share of the ideal.
    concurrency: int = 0
    rss_mb: float | None = None
    ideal_fraction: float | None = None


def summarise(system: str, label: str, results: list[Result], peer: str = "",
              concurrency: int = 0) -> Summary:
    """Fold the rounds of one system into one row."""
    latencies = [value for result in results for value in result.latencies]
    return Summary(
        system=system,
        label=label,
        put_rate=median([r.put_rate for r in results]),
        drain_rate=median([r.drain_rate for r in results]),
        drain_wall_rate=median([r.drain_wall_rate for r in results]),
        live_rate=median([r.live_rate for r in results]),
        worker_cpu_ms=median([r.worker_cpu_ms for r in results]),
        redis_cpu_ms=median([r.redis_cpu_ms for r in results]),
        put_client_us=median([r.put_client_us for r in results]),
        put_redis_us=median([r.put_redis_us for r in results]),
        bytes_per_job=median([r.bytes_per_job for r in results]),
        p50_ms=percentile(latencies, 0.50) * 1000 if latencies else None,
        p99_ms=percentile(latencies, 0.99) * 1000 if latencies else None,
        samples=len(latencies),
        duplicates=sum(r.duplicates for r in results),
        errors=[error for r in results for error in r.errors],
        peer=peer or system,
        concurrency=concurrency,
        rss_mb=median([r.rss_mb for r in results]),
        ideal_fraction=median([r.ideal_fraction for r in results]),
    )


def number(value: float | None, digits: int = 0) -> str:
    """A figure with thousands separators, "-" when not measured."""
    return "-" if value is None else f"{value:,.{digits}f}"


#: A column of the table: its header and how a row's cell is written.
Column = tuple[str, Callable[[Summary], str]]

#: Columns more than one bench prints.
DRAIN: Column = ("drain/s", lambda row: number(row.drain_rate))
DRAIN_START: Column = ("drain+start/s", lambda row: number(row.drain_wall_rate))
P50: Column = ("p50 ms", lambda row: number(row.p50_ms, 2))
P99: Column = ("p99 ms", lambda row: number(row.p99_ms, 2))
WORKER_CPU: Column = ("CPU µs/job worker", lambda row: micros(row.worker_cpu_ms))
REDIS_CPU: Column = ("redis", lambda row: micros(row.redis_cpu_ms))

WORKER_COLUMNS: tuple[Column, ...] = (
    ("put/s", lambda row: number(row.put_rate)),
    DRAIN,
    DRAIN_START,
    ("put-while-draining/s", lambda row: number(row.live_rate)),
    P50,
    P99,
    WORKER_CPU,
    REDIS_CPU,
    ("CPU µs/put client", lambda row: number(row.put_client_us)),
    ("redis", lambda row: number(row.put_redis_us)),
    ("bytes/queued job", lambda row: number(row.bytes_per_job)),
)


def table(rows: list[Summary], columns: tuple[Column, ...] = WORKER_COLUMNS) -> str:
    """The figures, one line per system."""
    head = ("system", *(name for name, _ in columns))
    lines = [head] + [(row.label, *(cell(row) for _, cell in columns)) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        rest = zip(line[1:], widths[1:], strict=True)
        cells = [line[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in rest]
        out.append("  ".join(cells))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def micros(milliseconds: float | None) -> str:
    """Milliseconds written as whole microseconds, "-" when not measured."""
    return "-" if milliseconds is None else f"{milliseconds * 1000:,.0f}"


def ratio_of(ours: float | None, theirs: float | None) -> float | None:
    """ours / theirs, None when either is not measured or theirs is 0."""
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs


#: The throughput figures compared, by their name in the ratio lines.
WORKER_FIGURES = (("drain", "drain_rate"), ("drain+start", "drain_wall_rate"),
                  ("put-while-draining", "live_rate"))


def ratios(rows: list[Summary], ours_name: str = "qless",
           figures: tuple[tuple[str, str], ...] = WORKER_FIGURES) -> str:
    """django_qless divided by each other system, per throughput figure."""
    ours = next((row for row in rows if row.system == ours_name), None)
    if ours is None or len(rows) < 2:
        return ""
    lines = ["django_qless / other (throughput; > 1 means django_qless is faster):"]
    for row in rows:
        if (row.peer or row.system) == ours_name:  # ours, in any configuration
            continue
        compared = (f"{name} {times(ratio_of(getattr(ours, attr), getattr(row, attr)))}"
                    for name, attr in figures)
        lines.append(f"  vs {row.label}: {', '.join(compared)}")
    return "\n".join(lines)


def same_concurrency(rows: list[Summary], ours_name: str = "qless") -> str:
    """Each configuration of django_qless divided by every peer's with as many slots (jobs/s)."""
    lines = []
    for ours in rows:
        if (ours.peer or ours.system) != ours_name or not ours.concurrency:
            continue
        others = [row for row in rows if (row.peer or row.system) != ours_name
                  and row.concurrency == ours.concurrency]
        compared = (f"{row.label} {times(ratio_of(ours.drain_rate, row.drain_rate))}"
                    for row in others)
        lines.append(f"  {ours.label}: vs " + (", ".join(compared) or "no peer with "
                                               f"{ours.concurrency} slots"))
    if not lines:
        return ""
    return "\n".join(["django_qless / each peer at the same total concurrency (jobs/s):",
                      *lines])


def best_ratios(rows: list[Summary], ours_name: str = "qless",
                figures: tuple[tuple[str, str], ...] = WORKER_FIGURES) -> str:
    """django_qless divided by each peer's best configuration, figure by figure: first its
    reference configuration (`ours_name`), then its own best when it ran in several."""
    ours = next((row for row in rows if row.system == ours_name), None)
    peers: dict[str, list[Summary]] = {}
    for row in rows:
        peers.setdefault(row.peer or row.system, []).append(row)
    mine = peers.pop(ours_name, [])
    if ours is None or not any(len(configs) > 1 for configs in [mine, *peers.values()]):
        return ""
    lines = ["django_qless / each peer's best configuration (per figure):"]
    lines += [f"  vs {peer}: {_best_vs_best([ours], configs, figures)}"
              for peer, configs in peers.items()]
    if len(mine) > 1:
        lines.append("django_qless at its best / each peer at its best (per figure):")
        lines += [f"  vs {peer}: {_best_vs_best(mine, configs, figures)}"
                  for peer, configs in peers.items()]
    return "\n".join(lines)


def _best_vs_best(ours: list[Summary], theirs: list[Summary],
                  figures: tuple[tuple[str, str], ...]) -> str:
    """Per figure, the best of `ours` divided by the best of `theirs`, naming the two."""
    parts = []
    for name, attr in figures:
        mine = _best(ours, attr)
        best = _best(theirs, attr)
        if mine is None or best is None:
            parts.append(f"{name} -")
            continue
        ratio = ratio_of(getattr(mine, attr), getattr(best, attr))
        who = best.label if len(ours) == 1 else f"{mine.label} / {best.label}"
        parts.append(f"{name} {times(ratio)} (best: {who})")
    return ", ".join(parts)


def _best(rows: list[Summary], attr: str) -> Summary | None:
    """The row with the highest measured `attr`, if any."""
    measured = [row for row in rows if getattr(row, attr) is not None]
    return max(measured, key=lambda row: getattr(row, attr), default=None)


def times(value: float | None) -> str:
    """A ratio as 1.23x, "-" when not measured."""
    return "-" if value is None else f"{value:.2f}x"


def drain_checks(rows: list[Summary], ours_name: str,
                 minimums: tuple[tuple[str, float], ...]) -> list[tuple[str, bool | None]]:
    """Our drain rate against each named system's, times its minimum ratio."""
    by_name = {row.system: row for row in rows}
    ours = by_name.get(ours_name)
    if ours is None:
        return []
    checks: list[tuple[str, bool | None]] = []
    for name, minimum in minimums:
        other = by_name.get(name)
        ratio = ratio_of(ours.drain_rate, other.drain_rate) if other else None
        checks.append((f"drain >= {minimum:.1f}x {name} ({times(ratio)})",
                       None if ratio is None else ratio >= minimum))
    return checks


def verdict(rows: list[Summary]) -> list[tuple[str, bool | None]]:
    """Each worker target with PASS (True), FAIL (False) or not measured (None)."""
    ours = next((row for row in rows if row.system == "qless"), None)
    if ours is None:
        return []
    checks = drain_checks(rows, "qless", (("huey", MIN_VS_HUEY), ("rq", MIN_VS_RQ)))
    checks.append((f"idle pickup p50 <= {MAX_P50_MS:g} ms ({number(ours.p50_ms, 2)} ms)",
                   None if ours.p50_ms is None else ours.p50_ms <= MAX_P50_MS))
    checks.append((f"idle pickup p99 <= {MAX_P99_MS:g} ms ({number(ours.p99_ms, 2)} ms)",
                   None if ours.p99_ms is None else ours.p99_ms <= MAX_P99_MS))
    return checks


def render_verdict(checks: list[tuple[str, bool | None]]) -> str:
    """PASS/FAIL lines."""
    word = {True: "PASS", False: "FAIL", None: "n/a "}
    return "\n".join(f"  {word[ok]}  {text}" for text, ok in checks)
