"""The job signals sent by enqueue and immediate mode, and the logging receivers."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.dispatch import Signal

from django_qless import signals
from tests.testapp.qless_jobs import add, explode, send_welcome


class Recorder:
    """Collects (signal name, sender, kwargs) for every signal it is connected to."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, dict[str, Any]]] = []

    def receiver(self, name: str) -> Any:
        def receive(sender: Any, signal: Signal, **kwargs: Any) -> None:
            self.sent.append((name, sender, kwargs))

        return receive

    def names(self) -> list[str]:
        return [name for name, _, _ in self.sent]


NAMES = ("job_enqueued", "job_started", "job_completed", "job_failed")


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A recorder on the job signals, disconnected afterwards."""
    rec = Recorder()
    receivers = {name: rec.receiver(name) for name in NAMES}
    for name, func in receivers.items():
        getattr(signals, name).connect(func)
    yield rec
    for name, func in receivers.items():
        getattr(signals, name).disconnect(func)


def test_job_enqueued_carries_the_documented_kwargs(recorder: Recorder, qless: Any) -> None:
    jid = send_welcome.using(delay=5).enqueue(1)
    [(name, sender, kwargs)] = recorder.sent
    assert name == "job_enqueued"
    assert sender is send_welcome
    assert kwargs == {
        "jid": jid, "queue": "emails", "klass": "tests.testapp.qless_jobs.send_welcome",
        "connection": "default", "priority": 10, "tags": ("mail", "welcome"), "delay": 5.0,
        "immediate": False,
    }
    assert qless.get_job(jid) is not None


def test_receivers_filtering_on_the_definition_see_using_copies(qless: Any) -> None:
    seen: list[str] = []

    def only_add(sender: Any, **kwargs: Any) -> None:
        seen.append(kwargs["jid"])

    signals.job_enqueued.connect(only_add, sender=add)
    try:
        jid = add.using(queue="other").enqueue(1, 2)
        send_welcome.enqueue(3)
    finally:
        signals.job_enqueued.disconnect(only_add, sender=add)
    assert seen == [jid]


@pytest.mark.django_db(transaction=True)
def test_job_enqueued_is_sent_at_commit_and_not_on_rollback(recorder: Recorder) -> None:
    with transaction.atomic():
        add.enqueue(1, 2)
        assert recorder.sent == []
    assert recorder.names() == ["job_enqueued"]
    with pytest.raises(KeyError), transaction.atomic():
        add.enqueue(1, 2)
        raise KeyError
    assert recorder.names() == ["job_enqueued"]


def test_immediate_mode_sends_the_worker_signals(
    recorder: Recorder, settings: Any, qless_url: str
) -> None:
    settings.QLESS = {"URL": qless_url, "IMMEDIATE": True}
    jid = add.enqueue(1, 2)
    assert recorder.names() == ["job_enqueued", "job_started", "job_completed"]
    enqueued, started, completed = (kwargs for _, _, kwargs in recorder.sent)
    assert enqueued["immediate"] is True
    assert started == {"jid": jid, "queue": "default", "klass": add.name, "worker": "immediate"}
    assert completed["worker"] == "immediate"
    assert completed["duration"] >= 0
    assert all(sender is add for _, sender, _ in recorder.sent)


def test_immediate_failure_sends_job_failed(
    recorder: Recorder, settings: Any, qless_url: str
) -> None:
    settings.QLESS = {"URL": qless_url, "IMMEDIATE": True}
    with pytest.raises(RuntimeError):
        explode.enqueue("bad")
    assert recorder.names() == ["job_enqueued", "job_started", "job_failed"]
    failed = recorder.sent[-1][2]
    assert isinstance(failed["exception"], RuntimeError)
    assert failed["group"] == "default-RuntimeError"
    assert failed["duration"] >= 0


def test_a_failing_receiver_is_logged_and_never_reaches_the_enqueue(
    recorder: Recorder, caplog: pytest.LogCaptureFixture, qless: Any
) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    signals.job_enqueued.connect(broken)
    try:
        with caplog.at_level(logging.ERROR, logger="django.dispatch"):
            jid = add.enqueue(1, 2)
    finally:
        signals.job_enqueued.disconnect(broken)
    assert qless.get_job(jid) is not None
    assert recorder.names() == ["job_enqueued"]  # the other receivers still ran
    [record] = [r for r in caplog.records if r.name == "django.dispatch"]
    assert record.exc_info is not None and str(record.exc_info[1]) == "receiver bug"


def test_every_signal_is_sent_through_the_one_rule() -> None:
    # `signals.send` is the only sender: no other module calls a signal's own send method.
    package = Path(signals.__file__).parent
    found = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py")) if path.name != "signals.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b(signal|job_\w+|worker_\w+)\.send(_robust)?\(", line)
    ]
    assert found == []


def test_all_documented_signals_exist() -> None:
    for name in (*NAMES, "job_retried", "job_lock_lost", "worker_started", "worker_stopped"):
        assert isinstance(getattr(signals, name), Signal)
        assert name in signals.__all__


def records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Records of the django_qless logger."""
    return [r for r in caplog.records if r.name == "django_qless"]


def test_enqueue_is_logged_with_structured_fields(
    caplog: pytest.LogCaptureFixture, qless: Any
) -> None:
    with caplog.at_level(logging.DEBUG, logger="django_qless"):
        jid = send_welcome.enqueue(1)
    [record] = records(caplog)
    assert record.levelno == logging.INFO
    assert (record.jid, record.queue, record.klass, record.connection) == (  # type: ignore[attr-defined]
        jid, "emails", send_welcome.name, "default"
    )
    assert jid in record.getMessage()


def test_failure_is_logged_with_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise ValueError("kaput")
    except ValueError as exc:
        error = exc
    with caplog.at_level(logging.DEBUG, logger="django_qless"):
        signals.job_failed.send(
            sender=None, jid="j1", queue="q", klass="k", worker="w1", duration=0.5,
            exception=error, group="q-ValueError",
        )
    [record] = records(caplog)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[1] is error
    assert (record.jid, record.group, record.worker) == ("j1", "q-ValueError", "w1")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("signal", "kwargs", "level", "text"),
    [
        ("job_started", {"worker": "w"}, logging.DEBUG, "qless job k j2 started"),
        ("job_completed", {"worker": "w", "duration": 1.25}, logging.INFO,
         "qless job k j2 completed in 1.25 s"),
        ("job_completed", {"worker": "w", "duration": 0.0081}, logging.INFO, "completed in 8 ms"),
        ("job_completed", {"worker": "w", "duration": 184.4}, logging.INFO,
         "completed in 3 min 4 s"),
        ("job_retried", {"worker": "w", "delay": 4, "remaining": 2}, logging.WARNING,
         "qless job k j2 in q retried in 4.00 s (no exception); 2 retries left"),
        ("job_lock_lost", {"worker": "w"}, logging.WARNING, "qless job k j2 lost its lock"),
    ],
)
def test_job_signals_are_logged(
    caplog: pytest.LogCaptureFixture, signal: str, kwargs: dict[str, Any], level: int, text: str
) -> None:
    with caplog.at_level(logging.DEBUG, logger="django_qless"):
        getattr(signals, signal).send(sender=None, jid="j2", queue="q", klass="k", **kwargs)
    [record] = records(caplog)
    assert record.levelno == level
    assert text in record.getMessage()
    assert (record.jid, record.worker) == ("j2", "w")  # type: ignore[attr-defined]


def test_worker_signals_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="django_qless"):
        signals.worker_started.send(sender=object(), worker="host-1", queues=["a", "b"])
        signals.worker_stopped.send(sender=object(), worker="host-1", queues=["a", "b"])
    started, stopped = records(caplog)
    assert started.getMessage() == "qless worker host-1 started on a, b"
    assert stopped.getMessage() == "qless worker host-1 stopped"
    assert started.worker == "host-1"  # type: ignore[attr-defined]


def test_library_installs_no_log_handlers() -> None:
    assert logging.getLogger("django_qless").handlers == []


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which signals went through Django's dispatch (`send_robust`), in order."""
    calls: list[str] = []
    for name in signals.__all__:
        signal = getattr(signals, name)
        if isinstance(signal, Signal):
            original = signal.send_robust

            def spy(sender: Any, *, _name: str = name, _send: Any = original,
                    **kwargs: Any) -> Any:
                calls.append(_name)
                return _send(sender, **kwargs)

            monkeypatch.setattr(signal, "send_robust", spy)
    return calls


def test_a_signal_only_a_silent_log_receiver_hears_is_not_dispatched(
    caplog: pytest.LogCaptureFixture, dispatched: list[str], qless: Any
) -> None:
    with caplog.at_level(logging.WARNING, logger="django_qless"):
        send_welcome.enqueue(1)  # job_enqueued logs at INFO: off
        signals.send(signals.job_lock_lost, None, jid="j", queue="q", klass="k", worker="w")
    assert dispatched == ["job_lock_lost"]  # logged at WARNING: on
    assert [r.getMessage() for r in records(caplog)] == ["qless job k j lost its lock"]
    with caplog.at_level(logging.INFO, logger="django_qless"):
        jid = send_welcome.enqueue(2)
    assert dispatched == ["job_lock_lost", "job_enqueued"]
    assert jid in records(caplog)[-1].getMessage()


def test_a_signal_with_another_receiver_is_dispatched_while_logging_is_off(
    caplog: pytest.LogCaptureFixture, dispatched: list[str], recorder: Recorder, qless: Any
) -> None:
    with caplog.at_level(logging.WARNING, logger="django_qless"):
        jid = send_welcome.enqueue(1)
    assert dispatched == ["job_enqueued"]
    assert [(name, kwargs["jid"]) for name, _, kwargs in recorder.sent] == [("job_enqueued", jid)]
    assert records(caplog) == []
