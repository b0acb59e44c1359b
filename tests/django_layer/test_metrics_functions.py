"""Per-function Prometheus metrics: counters and run-time histogram from the lifetime
totals, klass labels bounded to the registered functions and the busiest others."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from django_qless.core import Client
from django_qless.core import fn_metrics as fm
from django_qless.metrics.exposition import exposition
from django_qless.metrics.functions import OTHER, OTHERS_SHOWN
from django_qless.worker.fn_tally import FunctionTally
from tests.django_layer.test_metrics import samples, value

pytestmark = pytest.mark.django_db(databases=["default", "other"])


def ran(qless: Client, klass: str, seconds: list[float], outcome: str = "completed") -> None:
    """Add executions as a worker's publication does."""
    tally = FunctionTally()
    for duration in seconds:
        tally.count(klass, "q", outcome, duration, None)
    pipe = qless.redis.pipeline()
    fm.add_functions(pipe, tally.take(), qless.now())
    pipe.execute()


def test_counters_and_run_histogram_per_function(qless: Client) -> None:
    ran(qless, "testapp.echo", [0.004, 0.004, 0.150])
    ran(qless, "testapp.echo", [0.8], outcome="retried")
    ran(qless, "testapp.echo", [2.5], outcome="failed")
    found = samples(exposition().decode())
    echo = {"klass": "testapp.echo"}
    assert value(found, "qless_function_executions_total", **echo) == 5
    assert value(found, "qless_function_failures_total", **echo) == 1
    assert value(found, "qless_function_retries_total", **echo) == 1
    buckets = {le: value(found, "qless_function_run_seconds_bucket", le=le, **echo)
               for le in ("0.005", "0.1", "0.2", "1.0", "2.0", "5.0", "+Inf")}
    assert buckets == {"0.005": 2, "0.1": 2, "0.2": 3, "1.0": 4, "2.0": 4, "5.0": 5, "+Inf": 5}
    assert value(found, "qless_function_run_seconds_count", **echo) == 5
    assert value(found, "qless_function_run_seconds_sum", **echo) == pytest.approx(3.458)


def test_other_clients_klasses_are_capped(qless: Client) -> None:
    for n in range(OTHERS_SHOWN + 5):
        ran(qless, f"other.k{n:02d}", [0.01] * (100 - n))  # k00 the busiest
    ran(qless, "testapp.echo", [0.01])  # registered: kept, however quiet
    text = exposition().decode()
    klasses = {sample.labels["klass"] for family in text_string_to_metric_families(text)
               if family.name == "qless_function_executions" for sample in family.samples}
    assert len(klasses) == OTHERS_SHOWN + 2
    assert "testapp.echo" in klasses and OTHER in klasses and "other.k00" in klasses
    assert f"other.k{OTHERS_SHOWN:02d}" not in klasses
    found = samples(text)
    rest = sum(100 - n for n in range(OTHERS_SHOWN, OTHERS_SHOWN + 5))
    assert value(found, "qless_function_executions_total", klass=OTHER) == rest
