"""What a worker publishes about itself: busiest klasses first, its settings as text."""

from __future__ import annotations

from django_qless.core.presence import KlassCount
from django_qless.worker.options import WorkerOptions
from django_qless.worker.self_report import KLASSES_SHOWN, busiest_klasses, shown_settings


def test_klasses_are_counted_by_outcome_busiest_first_and_capped() -> None:
    outcomes = {("a.send", "completed"): 5, ("a.send", "failed"): 1, ("a.sync", "completed"): 9,
                ("a.sync", "lock lost"): 4, ("a.rare", "failed"): 1}
    assert busiest_klasses(outcomes) == (
        KlassCount("a.sync", 9, 0), KlassCount("a.send", 5, 1), KlassCount("a.rare", 0, 1))
    many = {(f"k{n:03d}", "completed"): n for n in range(KLASSES_SHOWN + 10)}
    shown = busiest_klasses(many)
    assert len(shown) == KLASSES_SHOWN and shown[0] == KlassCount("k059", 59, 0)


def test_settings_are_text_and_unset_ones_left_out() -> None:
    options = WorkerOptions.from_settings(queues=("q",), time_limit=30.0, max_jobs=None,
                                          concurrency=8)
    shown = dict(shown_settings(options))
    assert shown["time_limit"] == "30.0" and "max_jobs" not in shown
    assert shown["concurrency"] == "8"
    assert shown["isolation"] == "none"
    assert all(isinstance(value, str) for value in shown.values())
