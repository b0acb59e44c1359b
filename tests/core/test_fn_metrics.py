"""Per-function figures: written per slot at three resolutions, read back by range, with
percentiles from the millisecond histograms close to those of the durations counted."""

from __future__ import annotations

import statistics

import pytest
from redis import Redis

from django_qless.core import Job, keys, ms_buckets
from django_qless.core import fn_metrics as fm
from django_qless.worker.fn_tally import FunctionTally

NOW = 1_800_000_000.0  # a quarter-hour and hour boundary


def flush(redis_client: Redis, tally: FunctionTally, at: float) -> None:
    """Add what `tally` counted at `at`, as a worker's publication does."""
    pipe = redis_client.pipeline()
    fm.add_functions(pipe, tally.take(), at)
    pipe.execute()


def test_percentiles_follow_the_durations_counted(redis_client: Redis) -> None:
    tally = FunctionTally()
    durations = [5 + 0.5 * i for i in range(1000)]  # 5 ms to 504.5 ms, evenly
    for ms in durations:
        tally.count("app.report", "reports", "completed", ms / 1000, 0.020)
    flush(redis_client, tally, NOW)
    figures = fm.read_list(redis_client, "1h", NOW).totals()["app.report"]
    assert figures.executions == figures.completed == 1000
    assert figures.run_ms == pytest.approx(sum(durations), abs=1000)  # each rounded to 1 ms
    assert figures.average_ms == pytest.approx(statistics.mean(durations), rel=0.01)
    for fraction in (0.5, 0.95, 0.99):
        exact = durations[int(fraction * len(durations)) - 1]
        # Linear inside buckets ~1.5x wide: within a quarter of the true value.
        assert figures.run_percentile(fraction) == pytest.approx(exact, rel=0.25)
    waits = fm.read_histograms(redis_client, "1h", NOW).totals()["app.report"]
    assert ms_buckets.lower_bound(ms_buckets.bucket_of(20)) <= waits.wait_percentile(0.5) <= 20


def test_outcomes_failure_rate_and_tops(redis_client: Redis) -> None:
    tally = FunctionTally()
    for _ in range(8):
        tally.count("app.fast", "q", "completed", 0.001, None)
    tally.count("app.fast", "q", "failed", 0.001, None)
    tally.count("app.fast", "q", "retried", 0.001, None)
    tally.count("app.slow", "q", "completed", 2.0, None)
    flush(redis_client, tally, NOW)
    window = fm.read_list(redis_client, "1h", NOW)
    fast = window.totals()["app.fast"]
    assert (fast.executions, fast.completed, fast.failures, fast.retries) == (10, 8, 1, 1)
    assert fast.failure_rate == 20.0 and sum(fast.wait) == 0
    assert [f.klass for f in window.top("run_ms")] == ["app.slow", "app.fast"]
    assert [f.klass for f in window.top("failures")] == ["app.fast"]


def test_each_range_reads_its_own_slots(redis_client: Redis) -> None:
    tally = FunctionTally()
    tally.count("app.task", "q", "completed", 0.1, None)
    flush(redis_client, tally, NOW - 3 * 3600)  # three hours ago
    tally.count("app.task", "q", "completed", 0.1, None)
    flush(redis_client, tally, NOW - 2 * 86400)  # two days ago
    tally.count("app.task", "q", "completed", 0.1, None)
    flush(redis_client, tally, NOW)
    executions = {name: fm.read_list(redis_client, name, NOW).totals()["app.task"].executions
                  for name in fm.LIST_RANGES}
    assert executions == {"1h": 1, "24h": 2, "7d": 3}
    day = fm.read_function(redis_client, "24h", "app.task", NOW)
    assert len(day.slots) == 96 and sum(f.executions for f in day.function("app.task")) == 2
    week = fm.read_function(redis_client, "7d", "app.task", NOW)
    assert len(week.slots) == 168 and week.slots[-1].start == NOW
    assert [f.executions for f in week.function("app.task") if f.executions] == [1, 1, 1]
    assert sum(f.executions for f in week.function("app.other")) == 0


def test_slots_expire_by_resolution_and_totals_never(redis_client: Redis) -> None:
    tally = FunctionTally()
    tally.count("app.task", "q", "retried", 0.3, 0.0)
    flush(redis_client, tally, NOW)
    ttls = {r.name: redis_client.ttl(keys.fn_slot(r.name, r.slot_of(NOW)))
            for r in fm.RESOLUTIONS}
    assert ttls == {"m": 65 * 60, "q": 25 * 3600, "h": 8 * 86400, "d": 8 * 86400}
    extra = {r.name: redis_client.ttl(keys.fn_extra(r.name, r.slot_of(NOW)))
             for r in fm.RESOLUTIONS}
    assert extra == {"m": 65 * 60, "q": 25 * 3600, "h": 8 * 86400, "d": -2}  # none per day
    assert redis_client.ttl(keys.FN_TOTALS) == -1
    totals = fm.read_totals(redis_client)["app.task"]
    assert (totals.executions, totals.retries, totals.run_ms) == (1, 1, 300)
    assert sum(totals.wait) == 0  # wait histograms are kept per slot only


def test_queue_and_overall_histograms(redis_client: Redis) -> None:
    tally = FunctionTally()
    tally.count("a", "mail", "completed", 0.010, 0.5)
    tally.count("b", "mail", "completed", 0.010, 0.5)
    tally.count("b", "sms", "failed", 1.0, None)
    flush(redis_client, tally, NOW)
    window = fm.read_histograms(redis_client, "1h", NOW)
    run, wait = window.overall()
    assert sum(run) == 3 and sum(wait) == 2
    assert sum(window.queue("mail")[0]) == 2 and sum(window.queue("sms")[1]) == 0


def test_odd_names_and_foreign_fields(redis_client: Redis) -> None:
    tally = FunctionTally()
    tally.count("pkg:odd name\nx", "q:1", "completed", 0.05, None)
    flush(redis_client, tally, NOW)
    key = keys.fn_slot("m", fm.MINUTES.slot_of(NOW))
    redis_client.hset(key, mapping={"zz:1:app": 5, "rh:999:app": 1, "n:bad": "x"})
    window = fm.read_list(redis_client, "1h", NOW)
    assert window.totals()["pkg:odd name\nx"].executions == 1
    assert sum(fm.read_histograms(redis_client, "1h", NOW).queue("q:1")[0]) == 1
    assert window.totals().get("bad") is None or window.totals()["bad"].executions == 0


@pytest.mark.parametrize(("fields", "waited"), [
    ({"waited": 0.0123}, 0.0123),  # a lean pop says it
    ({"history": [{"what": "put", "when": 100}, {"what": "popped", "when": 103}]}, 3.0),
    ({"history": [{"what": "failed", "when": 100}, {"what": "popped", "when": 103}]}, None),
    ({"history": [{"what": "popped", "when": 103}]}, None),
    ({}, None),  # a lean reply of another script: not read from Redis
])
def test_the_wait_a_popped_job_carries(fields: dict[str, object], waited: float | None) -> None:
    job = Job(None, {"jid": "j", "klass": "k", **fields})  # type: ignore[arg-type]
    assert job.waited == waited  # no client: nothing is read


def test_durations_per_slot_of_every_job_or_one_queue(redis_client: Redis) -> None:
    tally = FunctionTally()
    tally.count("a", "mail", "completed", 0.120, 0.004)
    tally.count("b", "sms", "completed", 2.0, None)
    flush(redis_client, tally, NOW - 60)
    runs, waits = fm.read_durations(redis_client, "1h", NOW)
    assert len(runs) == len(waits) == fm.RANGES["1h"].slots
    assert runs[-1] is None and waits[-1] is None  # nothing in the current minute
    ran, waited = runs[-2], waits[-2]
    assert ran is not None and waited is not None
    assert sum(ran) == 2 and sum(waited) == 1
    mail_runs, mail_waits = fm.read_durations(redis_client, "1h", NOW, "mail")
    only = mail_runs[-2]
    assert only is not None and only[ms_buckets.bucket_of(120)] == 1 and sum(only) == 1
    assert fm.read_durations(redis_client, "1h", NOW, "none")[0] == [None] * 60
