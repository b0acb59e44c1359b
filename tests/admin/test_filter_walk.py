"""FilterWalk over real Redis: each criterion, combined ones, cursors, shifting sets, bad
input; and how a page of results gathers its steps."""

from __future__ import annotations

import time

import pytest

from django_qless.admin.filter_walk import Cursor, FilterWalk, check_filter
from django_qless.admin.search_results import result_page
from django_qless.admin.selection import START, JobFilter, Step
from django_qless.core import Client, InvalidArgumentError
from tests.admin.conftest import KLASS, World

OTHER = "tests.testapp.qless_jobs.other"


def walk_all(client: Client, job_filter: JobFilter, *, limit: int = 25, **sizes: int) -> list[str]:
    """Every jid the walk finds, step after step (at most 1,000 steps)."""
    walk = FilterWalk(client, job_filter, **sizes)
    found: list[str] = []
    cursor: str | None = START
    for _ in range(1_000):
        assert cursor is not None
        step = walk.step(cursor, limit)
        assert len(step.jids) <= limit
        found += step.jids
        cursor = step.cursor
        if step.done:
            return found
    raise AssertionError("the walk did not end")


def find(client: Client, **criteria: object) -> set[str]:
    """The jids matching a filter made of `criteria`."""
    return set(walk_all(client, JobFilter(**criteria)))  # type: ignore[arg-type]


def test_an_empty_filter_finds_every_job_in_every_state(qless: Client, world: World) -> None:
    everything = {
        world.waiting, world.scheduled, world.parent, world.child, world.running,
        world.failed, world.complete,
    }
    assert find(qless) == everything
    assert world.recurring not in find(qless)  # a template is not a job


@pytest.mark.parametrize(
    ("state", "attribute"),
    [("scheduled", "scheduled"), ("depends", "child"), ("running", "running"),
     ("failed", "failed"), ("complete", "complete")],
)
def test_each_state_finds_its_job_only(
    qless: Client, world: World, state: str, attribute: str
) -> None:
    assert find(qless, state=state) == {getattr(world, attribute)}


def test_waiting_lists_the_queue_in_pop_order(qless: Client, world: World) -> None:
    assert walk_all(qless, JobFilter(state="waiting")) == [world.parent, world.waiting]


def test_queue_finds_its_waiting_scheduled_depends_and_failed_jobs(
    qless: Client, world: World
) -> None:
    assert find(qless, queue="jobs") == {world.waiting, world.scheduled, world.parent, world.child}
    assert find(qless, queue="broken") == {world.failed}
    assert find(qless, queue="jobs", state="scheduled") == {world.scheduled}
    assert find(qless, queue="no-such-queue") == set()


def test_klass_tag_and_jid_prefix(qless: Client, world: World) -> None:
    other = qless.queue("jobs").put(OTHER, {}, jid="zz-other-1")
    assert find(qless, klass=OTHER) == {other}
    assert world.waiting in find(qless, klass=KLASS)
    assert other not in find(qless, klass=KLASS)
    assert find(qless, tag="red") == {world.waiting, world.scheduled, world.failed}
    assert find(qless, tag="red", state="failed") == {world.failed}
    assert find(qless, jid_prefix="zz-oth") == {other}
    assert find(qless, jid_prefix=world.running[:12]) == {world.running}


def test_worker_finds_the_jobs_it_holds_and_the_ones_it_failed(
    qless: Client, world: World
) -> None:
    assert find(qless, worker=world.worker) == {world.running}
    assert find(qless, worker=world.worker, state="failed") == {world.failed}
    assert find(qless, worker=world.worker, state="waiting") == set()
    assert find(qless, worker="someone-else") == set()


def test_failure_group(qless: Client, world: World) -> None:
    assert find(qless, group=world.group) == {world.failed}
    assert find(qless, group=world.group, klass=OTHER) == set()
    assert find(qless, group="no-such-group") == set()


def test_data_substring_never_matches_a_masked_secret(qless: Client, world: World) -> None:
    assert find(qless, data_contains='"args":[1,2]', state="waiting") == {
        world.waiting, world.parent
    }
    # The waiting job's data holds {"password": "hunter2"}: the admin masks it, so a
    # search must not confirm a guess of it either.
    assert find(qless, data_contains="password") == {world.waiting}
    assert find(qless, data_contains="hunter2") == set()
    assert find(qless, data_contains="hunter") == set()


def test_time_range_on_the_time_in_state(qless: Client) -> None:
    now = qless.now()
    old = Client(qless.redis, clock=lambda: now - 3600).queue("q").put(KLASS, {})
    new = qless.queue("q").put(KLASS, {})
    assert find(qless, since=now - 60) == {new}
    assert find(qless, until=now - 60) == {old}
    assert find(qless, since=now - 7200, until=now - 1800) == {old}


def test_stalled_is_a_lock_that_ran_out(qless: Client) -> None:
    now = qless.now()
    late = Client(qless.redis, clock=lambda: now - 3 * 86400)
    late.queue("q").put(KLASS, {}, jid="stale")
    late.queue("q").pop()
    qless.queue("q").put(KLASS, {}, jid="fresh")
    qless.queue("q").pop()
    assert find(qless, state="stalled") == {"stale"}
    assert find(qless, state="running") == {"fresh"}


def test_combined_criteria_must_all_hold(qless: Client) -> None:
    queue = qless.queue("mixed")
    for n in range(12):
        tags = ["t"] if n % 3 else []
        queue.put(KLASS if n % 2 else OTHER, {"n": n}, jid=f"m-{n:02d}", tags=tags)
    found = find(qless, queue="mixed", klass=KLASS, tag="t", jid_prefix="m-0")
    assert found == {"m-01", "m-05", "m-07"}


def test_steps_resume_from_their_cursor_and_count_what_they_looked_at(qless: Client) -> None:
    queue = qless.queue("many")
    for n in range(40):
        queue.put(KLASS if n % 4 == 0 else OTHER, {}, jid=f"j-{n:02d}", priority=-n)
    walk = FilterWalk(qless, JobFilter(queue="many", klass=KLASS), slice_size=3, budget=7)
    first = walk.step(START, 25)
    assert first.looked == 7 and first.total == 40 and not first.done
    assert first.jids == ("j-00", "j-04")
    # The same cursor gives the same step: a page reload or a retried chunk is safe.
    assert walk.step(START, 25) == first
    steps: list[Step] = [first]
    while not steps[-1].done:
        assert steps[-1].cursor is not None
        steps.append(walk.step(steps[-1].cursor, 25))
    found = [jid for step in steps for jid in step.jids]
    assert found == [f"j-{n:02d}" for n in range(0, 40, 4)]
    assert [step.looked for step in steps] == [7, 14, 21, 28, 35, 40]
    assert steps[-1].total == 40 and steps[-1].cursor is None


def test_a_step_stops_at_its_limit_and_the_next_goes_on_from_there(qless: Client) -> None:
    for n in range(10):
        qless.queue("q").put(KLASS, {}, jid=f"a-{n}", priority=-n)
    walk = FilterWalk(qless, JobFilter(queue="q"))
    step = walk.step(START, 3)
    assert step.jids == ("a-0", "a-1", "a-2") and step.looked == 3
    assert step.cursor is not None
    assert walk.step(step.cursor, 3).jids == ("a-3", "a-4", "a-5")
    assert walk_all(qless, JobFilter(queue="q"), limit=4) == [f"a-{n}" for n in range(10)]


def test_a_set_that_shrinks_mid_walk_still_ends(qless: Client) -> None:
    for n in range(30):
        qless.queue("q").put(KLASS, {}, jid=f"s-{n:02d}", priority=-n)
    walk = FilterWalk(qless, JobFilter(queue="q", state="waiting"), slice_size=5, budget=5)
    step = walk.step(START, 100)
    assert step.jids == tuple(f"s-{n:02d}" for n in range(5))
    qless.cancel(*[f"s-{n:02d}" for n in range(0, 30, 2)])  # half leave, ahead and behind
    seen = list(step.jids)
    for _ in range(10):
        assert step.cursor is not None
        step = walk.step(step.cursor, 100)
        seen += step.jids
        if step.done:
            break
    assert step.done
    remaining = {f"s-{n:02d}" for n in range(1, 30, 2)}
    # Documented: a shift may skip jobs, never invents or loops.
    assert set(seen) - {f"s-{n:02d}" for n in range(5)} <= remaining
    assert len(seen) == len(set(seen))


def test_a_set_that_grows_mid_walk_is_walked_to_its_first_size_only(qless: Client) -> None:
    for n in range(10):
        qless.queue("q").put(KLASS, {}, jid=f"g-{n:02d}", priority=-n)
    walk = FilterWalk(qless, JobFilter(queue="q", state="waiting"), slice_size=2, budget=2)
    step = walk.step(START, 100)
    steps = 1
    while not step.done:
        # Each step adds jobs at the end of the pop order, faster than the walk reads.
        for n in range(3):
            qless.queue("q").put(KLASS, {}, jid=f"g-new-{steps}-{n}", priority=-100)
        assert step.cursor is not None
        step = walk.step(step.cursor, 100)
        steps += 1
    assert steps == 5 and step.looked == 10


def test_every_queue_one_after_another(qless: Client) -> None:
    qless.queue("b").put(KLASS, {}, jid="in-b")
    qless.queue("a").put(KLASS, {}, jid="in-a")
    assert walk_all(qless, JobFilter(klass=KLASS), slice_size=1, budget=1) == ["in-b", "in-a"]


def test_no_job_at_all_is_done_at_once(qless: Client) -> None:
    step = FilterWalk(qless, JobFilter()).step(START, 25)
    assert step == Step(jids=(), cursor=None, looked=0, total=0)


@pytest.mark.parametrize(
    ("job_filter", "message"),
    [
        (JobFilter(state="sleeping"), "unknown state 'sleeping'"),
        (JobFilter(group="g", state="waiting"), "failed jobs only"),
        (JobFilter(queue="q", state="complete"), "completed jobs keep no queue"),
        (JobFilter(since=20.0, until=10.0), "ends before it starts"),
        (JobFilter(since=float("nan")), "since must be a time"),
    ],
)
def test_a_filter_nothing_could_meet_is_refused(job_filter: JobFilter, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        check_filter(job_filter)


@pytest.mark.parametrize("cursor", ["garbage", "w1.1.2", "w1.-1.0.0.0", "w9.0.0.0.0", "w1.a.b.c.d"])
def test_a_cursor_the_walk_did_not_write_is_refused(qless: Client, cursor: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a search cursor"):
        FilterWalk(qless, JobFilter()).step(cursor, 25)


def test_the_cursor_round_trips() -> None:
    cursor = Cursor(3, 1500, 90000, 4200)
    assert Cursor.parse(cursor.text()) == cursor
    assert Cursor.parse(START) == Cursor()


def test_a_limit_below_one_is_refused(qless: Client) -> None:
    with pytest.raises(InvalidArgumentError, match="limit"):
        FilterWalk(qless, JobFilter()).step(START, 0)


class Scripted:
    """A Selection that answers scripted steps, to test how a page gathers them."""

    def __init__(self, steps: list[Step], pause: float = 0.0) -> None:
        self.filter = JobFilter()
        self.steps = steps
        self.pause = pause
        self.asked: list[tuple[str, int]] = []

    def step(self, cursor: str, limit: int) -> Step:
        self.asked.append((cursor, limit))
        time.sleep(self.pause)
        return self.steps[len(self.asked) - 1]


def test_a_page_gathers_steps_until_it_is_full_and_shows_a_job_once() -> None:
    steps = [Step(("a", "b"), "c1", 10, 100), Step(("b", "c"), "c2", 20, 100),
             Step(("d",), "c3", 30, 100)]
    selection = Scripted(steps)
    page = result_page(selection, START, size=4)
    assert page.jids == ("a", "b", "c", "d") and page.cursor == "c3" and page.looked == 30
    assert selection.asked == [(START, 4), ("c1", 2), ("c2", 1)]


def test_a_page_stops_at_the_end_of_the_walk_its_steps_or_its_time() -> None:
    done = result_page(Scripted([Step(("a",), None, 5, 5)]), START)
    assert done.done and done.jids == ("a",) and done.steps == 1
    many = [Step((), f"c{n}", n, 100) for n in range(1, 10)]
    assert result_page(Scripted(many), START, max_steps=3).cursor == "c3"
    slow = result_page(Scripted(many, pause=0.05), START, seconds=0.08)
    assert slow.steps == 2 and slow.cursor == "c2" and not slow.done
