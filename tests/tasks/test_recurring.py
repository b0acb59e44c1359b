"""Django Tasks tasks on a schedule: `QLESS["RECURRING"]` and `qless_recur` with a task as JOB,
interval and cron, run by a worker as an enqueued task (its result read by `get_result`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from types import ModuleType
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless.conf import get_settings
from django_qless.core import Client
from django_qless.core.crons import CronStore
from django_qless.core.templates import Templates
from django_qless.recurring import sync_schedules
from django_qless.recurring.sync import RecurringSyncError
from django_qless.schedules import MANAGED_TAG, Schedule, every, schedule_jid
from django_qless.tasks.compat import TaskResultStatus, task_finished
from django_qless.tasks.exceptions import NotQlessBackendError
from django_qless.tasks.schedule import resolve_task_schedule
from django_qless.worker import Worker, WorkerOptions
from tests.redis_harness import RedisServer
from tests.support import FakeClock

#: 2023-11-15 00:00:00 UTC.
MIDNIGHT = 1_700_006_400
ADD = "tests.tasks.taskapp.tasks.add"


@pytest.fixture(autouse=True)
def database_reachable(django_db_blocker: Any) -> Iterator[None]:
    """The worker closes Django connections around each job."""
    with django_db_blocker.unblock():
        yield


@pytest.fixture
def clock() -> FakeClock:
    """Starts a quarter second after MIDNIGHT."""
    return FakeClock(MIDNIGHT + 0.25)


@pytest.fixture
def client(redis_server: RedisServer, clock: FakeClock) -> Iterator[Client]:
    """A qless client on the suite's server that reads `clock` (syncs and the worker)."""
    connection = redis_server.client()
    yield Client(connection, clock=clock, worker_name="recur-task")
    connection.close()


@pytest.fixture
def finished() -> Iterator[list[Any]]:
    """Every `task_finished` result the worker sends."""
    sent: list[Any] = []

    def on_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(task_result)

    task_finished.connect(on_finished)
    yield sent
    task_finished.disconnect(on_finished)


def declare(settings: Any, **entries: dict[str, Any]) -> None:
    """`QLESS["RECURRING"]` = `entries`."""
    settings.QLESS = {**settings.QLESS, "RECURRING": entries}


def sync(client: Client) -> Any:
    """`qless_recur`'s sync on the clocked client; raises on any problem."""
    report = sync_schedules(clients={"default": client})
    report.raise_for_errors()
    return report


def work(client: Client, *queues: str) -> Worker:
    """A worker on the clocked client that runs what can run now."""
    worker = Worker(WorkerOptions(queues=queues or ("default",), handle_signals=False),
                    client=client)
    while worker.run_once():
        pass
    return worker


def test_an_interval_schedule_of_a_task_runs_as_an_enqueued_task(
    settings: Any, client: Client, clock: FakeClock, tasks: ModuleType, finished: list[Any]
) -> None:
    declare(settings, adder={"JOB": ADD, "EVERY": every(minutes=1), "ARGS": [2, 3]})
    sync(client)
    [template] = Templates(client).read([schedule_jid("adder")])
    assert (template.klass, template.queue, template.interval) == (ADD, "default", 60)
    assert MANAGED_TAG in template.tags
    # The job data QlessBackend.enqueue writes: the task marker names its backend.
    assert json.loads(template.data) == {"args": [2, 3], "kwargs": {},
                             "task": {"backend": "default", "takes_context": False}}
    tasks.CALLS.clear()
    clock.now = MIDNIGHT + 60
    work(client)
    assert tasks.CALLS == [("add", (2, 3))]
    [done] = finished
    assert done.status == TaskResultStatus.SUCCESSFUL
    result = tasks.add.get_result(done.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert done.id.startswith(schedule_jid("adder"))


def test_a_cron_schedule_of_a_task_object_runs_as_an_enqueued_task(
    settings: Any, client: Client, clock: FakeClock, tasks: ModuleType, finished: list[Any]
) -> None:
    declare(settings, shouting={"JOB": tasks.shout, "CRON": "*/5 * * * *",
                                "ARGS": ["hi"], "KWARGS": {"times": 2}})
    sync(client)
    [stored] = CronStore(client).read_all()
    # The task's own queue and priority, as its enqueue would use.
    assert (stored.definition.klass, stored.definition.queue, stored.definition.priority) == (
        "tests.tasks.taskapp.tasks.shout", "other", 5.0)
    clock.now = MIDNIGHT + 300
    work(client, "other")
    [done] = finished
    assert done.id.startswith("cron-")
    result = tasks.shout.get_result(done.id)
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, "HIHI")
    assert result.args == ["hi"] and result.kwargs == {"times": 2}


def test_a_context_task_on_a_schedule_gets_its_context(
    settings: Any, client: Client, clock: FakeClock, tasks: ModuleType, finished: list[Any]
) -> None:
    declare(settings, ctx={"JOB": "tests.tasks.taskapp.tasks.attempt_number",
                           "CRON": "* * * * *", "ARGS": ["nightly"]})
    sync(client)
    clock.now = MIDNIGHT + 60
    work(client)
    [done] = finished
    result = tasks.attempt_number.get_result(done.id)
    assert result.return_value == {"label": "nightly", "attempt": 1, "id": done.id}


def test_qless_recur_syncs_a_task_schedule(settings: Any, tasks: ModuleType) -> None:
    declare(settings, adder={"JOB": ADD, "CRON": "0 9 * * *", "ARGS": [1, 2],
                             "QUEUE": "other", "PRIORITY": -3})
    out = StringIO()
    call_command("qless_recur", stdout=out, no_color=True)
    assert "create" in out.getvalue() and "adder" in out.getvalue()
    [(_, stored)] = [(a, s) for a, s in _crons() if s.name == "adder"]
    assert (stored.definition.klass, stored.definition.queue, stored.definition.priority) == (
        ADD, "other", -3.0)


def _crons() -> list[Any]:
    """Every cron schedule of every configured connection."""
    from django_qless.recurring.sync import list_crons  # noqa: PLC0415

    return list_crons()


def test_a_task_whose_backend_is_not_qless_is_a_typed_error(
    settings: Any, client: Client, tasks: ModuleType
) -> None:
    with pytest.raises(NotQlessBackendError, match="TASKS\\['dummy'\\], a .*DummyBackend, "
                       "not django_qless.tasks.QlessBackend"):
        resolve_task_schedule(tasks.on_dummy, Schedule(every(minutes=1), name="d"),
                              get_settings(), "here")
    declare(settings, nightly={"JOB": "tests.tasks.taskapp.tasks.on_dummy",
                               "CRON": "0 3 * * *"})
    report = sync_schedules(clients={"default": client})
    assert [p.id for p in report.problems] == ["django_qless.E024"]
    with pytest.raises(RecurringSyncError, match="not django_qless.tasks.QlessBackend"):
        report.raise_for_errors()
    assert CronStore(client).read_all() == []  # nothing written
    with pytest.raises(CommandError, match="E024"):
        call_command("qless_recur", stdout=StringIO(), stderr=StringIO())


@pytest.mark.parametrize(("entry", "problem", "text"), [
    ({"JOB": ADD, "EVERY": 60, "ARGS": [1]}, "django_qless.E023", "missing a required"),
    ({"JOB": ADD, "EVERY": 60, "ARGS": [1, float("nan")]}, "django_qless.E023", "JSON"),
    ({"JOB": ADD, "EVERY": 60, "ARGS": [1, 2], "QUEUE": "elsewhere"}, "django_qless.E023",
     "Queue 'elsewhere' is not valid"),
    ({"JOB": ADD, "EVERY": 60, "ARGS": [1, 2], "PRIORITY": 500}, "django_qless.E023",
     "priority"),
    ({"JOB": ADD, "EVERY": 60, "ARGS": [1, 2], "CONNECTION": "other"}, "django_qless.E023",
     "leave CONNECTION out"),
    ({"JOB": "tests.tasks.taskapp.tasks.not_a_task", "EVERY": 60}, "django_qless.E021",
     "nor a Django task"),
    ({"JOB": "os.path.join", "EVERY": 60}, "django_qless.E021", "nor a Django task"),
])
def test_a_task_schedule_that_cannot_be_enqueued_writes_nothing(
    settings: Any, client: Client, tasks: ModuleType, entry: dict[str, Any], problem: str,
    text: str,
) -> None:
    declare(settings, bad=entry)
    report = sync_schedules(clients={"default": client})
    assert [p.id for p in report.problems] == [problem]
    assert text in report.problems[0].message
    assert Templates(client).read([schedule_jid("bad")]) == []
