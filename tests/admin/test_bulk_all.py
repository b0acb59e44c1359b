"""Act on all matching jobs: collect, confirm with the count and filter, apply in audited chunks."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from django_qless.admin import bulk_all, bulk_runs
from django_qless.audit_log.models import AuditEntry
from django_qless.core import Client
from tests.admin.conftest import KLASS, logged_in, url
from tests.admin.test_bulk import plant_failed
from tests.conftest import LuaScript

#: More than one chunk, not a round number of them.
MANY = bulk_all.CHUNK * 2 + 37


def plant_waiting(
    lua: LuaScript, redis_client: redis.Redis, count: int, *, queue: str, prefix: str = "w",
    tags: tuple[str, ...] = (),
) -> list[str]:
    """`count` waiting jobs, written with pipelined script calls."""
    now = time.time()
    jids = [f"{prefix}{i:05d}" for i in range(count)]
    pipe = redis_client.pipeline(transaction=False)
    for jid in jids:
        lua.script(keys=[], args=["put", now, "w", queue, jid, KLASS, "{}", 0,
                                  "tags", json.dumps(list(tags))], client=pipe)
    pipe.execute()
    return jids


def bulk_keys(redis_client: redis.Redis) -> list[bytes]:
    """Every key of the bulk runs (the test server holds nothing else of ours)."""
    return sorted(redis_client.keys("ql:django_qless:bulk*"))


def start(client: HttpClient, selection: dict[str, str], action: str, **fields: str) -> Any:
    """POST the start of a run (not followed)."""
    body = {f"f_{key}": value for key, value in selection.items()}
    return client.post(url("bulk_start"), {"action": action, **body, **fields})


def run_id_of(response: Any) -> str:
    """The run a start or step redirected to."""
    assert response.status_code == 302, response.content[:500]
    found = re.search(r"/bulk/r/(\w+)/$", response["Location"])
    assert found, response["Location"]
    return found.group(1)


def step(client: HttpClient, run_id: str, **extra: str) -> Any:
    """POST one step of a run (not followed)."""
    return client.post(url("bulk_step"), {"run": run_id, **extra})


def collect(qless: Client, client: HttpClient, run_id: str) -> bulk_runs.Run:
    """Step until the run waits for its confirmation."""
    for _ in range(100):
        run = bulk_runs.load(qless, run_id)
        assert run is not None
        if run.phase != bulk_runs.COLLECT:
            return run
        assert step(client, run_id).status_code == 302
    raise AssertionError("collecting never ended")


def apply_all(qless: Client, client: HttpClient, run_id: str) -> bulk_runs.Run:
    """Confirm, then step until the run is done."""
    assert step(client, run_id, confirmed="yes").status_code == 302
    for _ in range(1000):
        run = bulk_runs.load(qless, run_id)
        assert run is not None
        if run.finished:
            return run
        assert step(client, run_id).status_code == 302
    raise AssertionError("applying never ended")


def run_to_end(
    qless: Client, client: HttpClient, selection: dict[str, str], action: str, **fields: str
) -> tuple[bulk_runs.Run, str]:
    """Start, collect, read the confirmation, apply: (the finished run, the confirmation)."""
    run_id = run_id_of(start(client, selection, action, **fields))
    ready = collect(qless, client, run_id)
    assert ready.phase == bulk_runs.READY
    page = client.get(url("bulk_run", run_id=run_id)).content.decode()
    return apply_all(qless, client, run_id), page


def chunks_audited(run: bulk_runs.Run) -> dict[int, int]:
    """Audit entries per chunk number of a run."""
    counts: dict[int, int] = {}
    for entry in AuditEntry.objects.filter(message__contains=f"bulk run {run.id}, chunk"):
        number = int(re.search(r"chunk (\d+):", entry.message).group(1))  # type: ignore[union-attr]
        counts[number] = counts.get(number, 0) + 1
    return counts


def test_retry_every_job_of_a_failure_group_in_chunks(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_failed(lua, redis_client, MANY, group="q-Boom", queue="q")
    run, page = run_to_end(qless, operator, {"state": "failed", "group": "q-Boom"}, "retry")
    assert f"Retry: all {MANY} jobs matching state failed, group q-Boom?" in page
    assert qless.failed() == {}
    assert qless.queue("q").counts().waiting == MANY
    assert (run.phase, run.done, run.problems, run.chunks) == ("done", MANY, 0, 3)
    assert chunks_audited(run) == {1: 200, 2: 200, 3: 37}
    entry = AuditEntry.objects.filter(action="retry").first()
    assert entry is not None and entry.before["state"] == "failed"
    assert entry.after["state"] == "waiting" and entry.actor == "operator"
    assert f"of {MANY} matching state failed, group q-Boom)" in entry.message
    assert LogEntry.objects.count() == MANY


def test_cancel_a_queue_tab_takes_the_dependents_along_and_lists_them(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    child = qless.queue("other").put(KLASS, {}, depends=[jids[300]])
    run, page = run_to_end(qless, operator, {"queue": "q", "state": "waiting"}, "cancel")
    assert f"Cancel: all {MANY} jobs matching queue q, state waiting? 1 job waiting on them " \
           "is cancelled with them." in page
    assert child in page and "This cannot be undone." in page
    assert qless.get_jobs([*jids, child]) == []
    assert (run.done, run.problems) == (MANY + 1, 0)
    assert AuditEntry.objects.filter(action="cancel").count() == MANY + 1
    assert sum(chunks_audited(run).values()) == MANY + 1


def test_move_to_another_queue(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_waiting(lua, redis_client, MANY, queue="q")
    qless.queue("target").put(KLASS, {})
    run, page = run_to_end(qless, operator, {"queue": "q", "state": "waiting"}, "move",
                           queue="target")
    assert f"Move to queue to queue target: all {MANY} jobs" not in page
    assert f"Move to queue target: all {MANY} jobs matching queue q, state waiting?" in page
    assert qless.queue("q").counts().waiting == 0
    assert qless.queue("target").counts().waiting == MANY + 1
    assert run.done == MANY and run.chunks == 3
    entry = AuditEntry.objects.filter(action="move").first()
    assert entry is not None and (entry.before["queue"], entry.after["queue"]) == ("q", "target")


def test_change_priority(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    run, page = run_to_end(qless, operator, {"queue": "q", "state": "waiting"}, "priority",
                           priority="7.5")
    assert f"Set priority to 7.5: all {MANY} jobs" in page
    assert {job.priority for job in qless.get_jobs(jids)} == {7.5}
    assert run.done == MANY
    assert AuditEntry.objects.filter(action="priority", after={"priority": 7.5}).count() == MANY


def test_add_then_remove_tags_of_every_job_with_a_tag(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q", tags=("red",))
    run, page = run_to_end(qless, operator, {"tag": "red"}, "tag", tags="blue, green")
    assert f"Add tags blue, green: all {MANY} jobs matching tag red?" in page
    assert all(set(job.tags) == {"red", "blue", "green"} for job in qless.get_jobs(jids))
    assert run.done == MANY
    run, _ = run_to_end(qless, operator, {"tag": "blue"}, "untag", tags="red")
    assert all(set(job.tags) == {"blue", "green"} for job in qless.get_jobs(jids))
    assert qless.tagged_jids("red", 0, 1)[0] == 0
    assert run.done == MANY


def test_track_every_waiting_job(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    run, _ = run_to_end(qless, operator, {"queue": "q", "state": "waiting"}, "track")
    assert qless.tracked_count() == MANY and all(job.tracked for job in qless.get_jobs(jids))
    # And the tracked list itself is a selection.
    run, page = run_to_end(qless, operator, {"tracked": "1"}, "priority", priority="2")
    assert f"all {MANY} jobs matching tracked jobs?" in page
    assert {job.priority for job in qless.get_jobs(jids)} == {2}


def test_a_closed_page_leaves_the_run_to_resume_where_it_stopped(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient,
    make_user: Callable[..., User],
) -> None:
    plant_failed(lua, redis_client, MANY, group="q-Boom", queue="q")
    run_id = run_id_of(start(operator, {"state": "failed", "group": "q-Boom"}, "retry"))
    collect(qless, operator, run_id)
    assert step(operator, run_id, confirmed="yes").status_code == 302  # one chunk, then closed
    assert qless.failed() == {"q-Boom": MANY - bulk_all.CHUNK}
    # Later, from another browser: the runs page lists it unfinished, with its progress.
    other = logged_in(make_user("other", superuser=True))
    listed = other.get(url("bulk_runs")).content.decode()
    assert run_id in listed and "apply" in listed and f"200 of {MANY}" in listed
    assert f'aria-label="Abandon run {run_id}"' in listed and ">Resume</a>" in listed
    page = other.get(url("bulk_run", run_id=run_id)).content.decode()
    assert f"Applying: 200 of {MANY} jobs taken" in page and "data-qless-auto" in page
    run = bulk_runs.load(qless, run_id)
    assert run is not None
    for _ in range(10):
        step(other, run_id)
    finished = bulk_runs.load(qless, run_id)
    assert finished is not None and finished.phase == "done"
    assert (finished.done, finished.problems, finished.chunks) == (MANY, 0, 3)
    assert qless.failed() == {}
    assert AuditEntry.objects.filter(action="retry").count() == MANY  # none twice
    assert set(AuditEntry.objects.values_list("actor", flat=True)) == {"operator", "other"}


def test_a_job_that_changed_between_collect_and_apply_is_reported_not_lost(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_failed(lua, redis_client, MANY, group="q-Boom", queue="q")
    run_id = run_id_of(start(operator, {"state": "failed", "group": "q-Boom"}, "retry"))
    collect(qless, operator, run_id)
    retried, cancelled = jids[5], jids[400]
    qless.get_jobs([retried])[0].requeue()
    qless.cancel(cancelled)
    run = apply_all(qless, operator, run_id)
    assert (run.done, run.problems) == (MANY - 2, 2)
    assert qless.failed() == {}
    assert sorted(bulk_runs.problem_lines(qless, run_id)) == sorted(
        [f"{retried}: is waiting, not failed", f"{cancelled}: no longer exists"]
    )
    page = operator.get(url("bulk_run", run_id=run_id)).content.decode()
    assert f"Done: {MANY - 2} of {MANY} jobs retried, 2 not done" in page
    assert f"{retried}: is waiting, not failed" in page


def test_nothing_is_done_before_the_confirmation(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, 30, queue="q")
    run_id = run_id_of(start(operator, {"queue": "q", "state": "waiting"}, "cancel"))
    assert collect(qless, operator, run_id).phase == bulk_runs.READY
    step(operator, run_id)  # no confirmed=yes
    assert len(qless.get_jobs(jids)) == 30 and AuditEntry.objects.count() == 0
    response = operator.post(url("bulk_abandon"), {"run": run_id})
    assert response.status_code == 302
    step(operator, run_id, confirmed="yes")
    run = bulk_runs.load(qless, run_id)
    assert run is not None and (run.phase, run.done) == ("abandoned", 0)
    assert len(qless.get_jobs(jids)) == 30


def test_abandoning_halfway_keeps_what_was_done_and_stops(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    run_id = run_id_of(start(operator, {"queue": "q", "state": "waiting"}, "priority",
                             priority="3"))
    collect(qless, operator, run_id)
    step(operator, run_id, confirmed="yes")
    operator.post(url("bulk_abandon"), {"run": run_id})
    step(operator, run_id)
    assert sorted(job.priority for job in qless.get_jobs(jids)).count(3) == bulk_all.CHUNK


#: A permission set that holds every qless permission but the one the action needs.
PERMS_WITHOUT = {
    "retry_jobs": ("view_qless", "cancel_jobs", "edit_jobs"),
    "cancel_jobs": ("view_qless", "retry_jobs", "edit_jobs"),
    "edit_jobs": ("view_qless", "retry_jobs", "cancel_jobs"),
}
NEEDS = {"retry": "retry_jobs", "cancel": "cancel_jobs", "move": "edit_jobs",
         "priority": "edit_jobs", "tag": "edit_jobs", "untag": "edit_jobs",
         "track": "edit_jobs"}
INPUT = {"move": {"queue": "q"}, "priority": {"priority": "1"}, "tag": {"tags": "x"},
         "untag": {"tags": "red"}}


@pytest.mark.parametrize("action", sorted(NEEDS))
def test_each_action_needs_the_permission_of_the_single_action(
    action: str, lua: LuaScript, redis_client: redis.Redis, qless: Client,
    operator: HttpClient, make_user: Callable[..., User],
) -> None:
    jids = plant_waiting(lua, redis_client, 10, queue="q", tags=("red",))
    selection = {"queue": "q", "state": "waiting"}
    lacking = logged_in(make_user("lacking", perms=PERMS_WITHOUT[NEEDS[action]]))
    assert start(lacking, selection, action, **INPUT.get(action, {})).status_code == 403
    assert bulk_keys(redis_client) == []
    # A run someone else started cannot be carried on, confirmed or abandoned either.
    run_id = run_id_of(start(operator, selection, action, **INPUT.get(action, {})))
    collect(qless, operator, run_id)
    before = redis_client.hgetall(bulk_runs.run_key(run_id))
    assert step(lacking, run_id, confirmed="yes").status_code == 403
    assert lacking.post(url("bulk_abandon"), {"run": run_id}).status_code == 403
    assert redis_client.hgetall(bulk_runs.run_key(run_id)) == before
    assert [job.state for job in qless.get_jobs(jids)] == ["waiting"] * 10
    assert AuditEntry.objects.count() == 0
    # Its choice page offers only the actions the user may run.
    page = lacking.get(url("bulk_choose") + "?queue=q&state=waiting").content.decode()
    assert f'value="{action}"' not in page


def test_a_viewer_may_look_but_not_start(
    lua: LuaScript, redis_client: redis.Redis, viewer: HttpClient
) -> None:
    plant_waiting(lua, redis_client, 3, queue="q")
    assert viewer.get(url("bulk_runs")).status_code == 200
    assert start(viewer, {"queue": "q", "state": "waiting"}, "retry").status_code == 403
    page = viewer.get(url("queue", name="q") + "?tab=waiting").content.decode()
    assert "Select all" not in page
    assert bulk_keys(redis_client) == []


def test_post_only_and_csrf(
    lua: LuaScript, redis_client: redis.Redis, make_user: Callable[..., User]
) -> None:
    plant_waiting(lua, redis_client, 3, queue="q")
    strict = logged_in(make_user("root", superuser=True), enforce_csrf_checks=True)
    body = {"action": "cancel", "f_queue": "q", "f_state": "waiting"}
    assert strict.post(url("bulk_start"), body).status_code == 403
    assert strict.get(url("bulk_start"), body).status_code == 405
    assert strict.get(url("bulk_step"), {"run": "x"}).status_code == 405
    assert strict.get(url("bulk_abandon"), {"run": "x"}).status_code == 405
    assert bulk_keys(redis_client) == []


@pytest.mark.parametrize(("selection", "action", "fields", "error"), [
    ({"queue": "q", "state": "waiting"}, "move", {"queue": "nowhere"},
     "There is no queue &#x27;nowhere&#x27;"),
    ({"queue": "q", "state": "waiting"}, "move", {"queue": ""}, "Give the queue"),
    ({"queue": "q", "state": "waiting"}, "priority", {"priority": "high"},
     "The priority must be a number"),
    ({"queue": "q", "state": "waiting"}, "priority", {"priority": "nan"}, "priority must be"),
    ({"queue": "q", "state": "waiting"}, "tag", {"tags": " , "}, "Give at least one tag."),
    ({"queue": "q", "state": "waiting"}, "untag", {"tags": ""}, "Give at least one tag."),
    ({"queue": "q", "state": "waiting"}, "explode", {}, "Select a valid choice"),
    ({"queue": "nope", "state": "waiting"}, "retry", {}, "there is no queue &#x27;nope&#x27;"),
    ({"queue": "q", "state": "asleep"}, "retry", {}, "unknown state &#x27;asleep&#x27;"),
    ({"group": "g", "state": "waiting"}, "retry", {}, "a failure group holds failed jobs only"),
    ({}, "retry", {}, "choose the jobs first"),
])
def test_bad_input_is_refused_before_anything_is_written(
    selection: dict[str, str], action: str, fields: dict[str, str], error: str,
    lua: LuaScript, redis_client: redis.Redis, operator: HttpClient,
) -> None:
    plant_waiting(lua, redis_client, 3, queue="q")
    response = start(operator, selection, action, **fields)
    assert response.status_code == 302 and "/bulk/new/" in response["Location"]
    page = operator.get(response["Location"]).content.decode()
    assert "Nothing was changed" in page and error in page
    assert bulk_keys(redis_client) == []
    assert AuditEntry.objects.count() == 0


def test_every_list_offers_select_all_matching(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_waiting(lua, redis_client, 30, queue="q", tags=("red",))
    plant_failed(lua, redis_client, 4, group="q-Boom", queue="fq", prefix="f")
    qless.track("w00001")
    done = qless.queue("done").put(KLASS, {})
    qless.queue("done").pop()[0].complete()
    assert done
    pages = {
        url("queue", name="q") + "?tab=waiting": ("queue=q&amp;state=waiting", 30),
        url("failure_group", group="q-Boom"): ("state=failed&amp;group=q-Boom", 4),
        url("tagged") + "?tag=red": ("tag=red", 30),
        url("tracked"): ("tracked=1", 1),
        url("completed"): ("state=complete", 1),
    }
    for path, (query, total) in pages.items():
        page = operator.get(path).content.decode()
        assert f"/bulk/new/?{query}&amp;next=" in page, path
        assert f"Select all {total} matching" in page, path
    choose = operator.get(url("bulk_choose") + "?state=failed&group=q-Boom").content.decode()
    assert "Jobs matching <strong>state failed, group q-Boom</strong>: about 4 jobs now" in choose


def test_a_selection_of_the_completed_jobs_counts_them_exactly(
    qless: Client, operator: HttpClient
) -> None:
    for _ in range(3):
        qless.queue("done").put(KLASS, {})
        qless.queue("done").pop()[0].complete()
    run, page = run_to_end(qless, operator, {"state": "complete"}, "tag", tags="old")
    assert "all 3 jobs matching state complete?" in page
    assert run.done == 3


def test_the_run_keys_expire(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    plant_waiting(lua, redis_client, 5, queue="q")
    run_id = run_id_of(start(operator, {"queue": "q", "state": "waiting"}, "cancel"))
    collect(qless, operator, run_id)
    for key in bulk_runs.all_keys(run_id)[:2]:
        assert 0 < redis_client.ttl(key) <= bulk_runs.TTL, key
    assert redis_client.exists(bulk_runs.lock_key(run_id)) == 0  # released after each step
    assert redis_client.zscore(bulk_runs.INDEX, run_id) is not None


def test_an_unknown_run_is_404(operator: HttpClient) -> None:
    assert operator.get(url("bulk_run", run_id="feedfacecafebeef")).status_code == 404
    response = operator.post(url("bulk_step"), {"run": "feedfacecafebeef"}, follow=True)
    assert "No bulk run" in response.content.decode()


def test_a_search_is_a_selection_too(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    wanted = plant_waiting(lua, redis_client, MANY, queue="q", prefix="a")
    others = [qless.queue("q").put("tests.testapp.qless_jobs.other", {}) for _ in range(20)]
    search = url("search") + f"?queue=q&klass={KLASS}"
    page = operator.get(search).content.decode()
    assert "Select all matching&hellip;" in page and f"/bulk/new/?queue=q&amp;klass={KLASS}" in page
    run, confirmation = run_to_end(qless, operator, {"queue": "q", "klass": KLASS}, "tag",
                                   tags="found")
    assert f"Add tags found: all {MANY} jobs matching queue q, klass {KLASS}?" in confirmation
    assert run.done == MANY
    assert all("found" in job.tags for job in qless.get_jobs(wanted))
    assert not any("found" in job.tags for job in qless.get_jobs(others))


def test_selecting_by_job_data_needs_the_data_permission(
    lua: LuaScript, redis_client: redis.Redis, make_user: Callable[..., User]
) -> None:
    plant_waiting(lua, redis_client, 3, queue="q")
    blind = logged_in(make_user("blind", perms=("view_qless", "edit_jobs")))
    response = start(blind, {"queue": "q", "data_contains": "secret"}, "track")
    page = blind.get(response["Location"]).content.decode()
    assert "selecting by job data needs the view_job_data permission" in page
    assert bulk_keys(redis_client) == []


def test_collecting_goes_a_few_bounded_steps_per_request_and_says_how_far(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk_all, "STEP_LIMIT", 50)
    monkeypatch.setattr(bulk_all, "STEPS_PER_REQUEST", 2)
    plant_waiting(lua, redis_client, MANY, queue="q")
    run_id = run_id_of(start(operator, {"queue": "q", "state": "waiting"}, "track"))
    run = bulk_runs.load(qless, run_id)
    assert run is not None and (run.phase, run.looked, run.total, run.matched) == (
        "collect", 100, MANY, 100)
    page = operator.get(url("bulk_run", run_id=run_id)).content.decode()
    assert f"Collecting: looked at 100 of {MANY} candidates, 100 match so far." in page
    assert qless.tracked_count() == 0
    requests = 1
    while run.phase == "collect":
        run = collect_one(qless, operator, run_id)
        requests += 1
    assert (run.phase, run.matched, requests) == ("ready", MANY, 5)  # 100 a request


def collect_one(qless: Client, client: HttpClient, run_id: str) -> bulk_runs.Run:
    """One collect request; the run after it."""
    assert step(client, run_id).status_code == 302
    run = bulk_runs.load(qless, run_id)
    assert run is not None
    return run


def test_a_run_takes_at_most_max_jobs_and_says_so(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk_all, "MAX_JOBS", 300)
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    run, page = run_to_end(qless, operator, {"queue": "q", "state": "waiting"}, "priority",
                           priority="4")
    assert "all 300 jobs matching queue q, state waiting?" in page
    assert "this run takes the first 300; start another for the rest" in page
    assert run.done == 300
    assert sorted(job.priority for job in qless.get_jobs(jids)).count(4) == 300


def test_a_matched_job_cancelled_earlier_with_its_dependency_is_not_a_problem(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q", tags=("red",))
    # Tagged last, so walked in the last chunk; cancelled in the first, with its parent.
    child = qless.queue("q").put(KLASS, {}, depends=[jids[0]], tags=["red"])
    run, page = run_to_end(qless, operator, {"tag": "red"}, "cancel")
    assert f"all {MANY + 1} jobs matching tag red?" in page
    assert qless.get_jobs([*jids, child]) == []
    assert (run.done, run.problems) == (MANY + 1, 0)
    [entry] = AuditEntry.objects.filter(action="cancel", target=child)
    assert "chunk 1:" in entry.message  # with its parent, long before its own turn
    assert bulk_runs.matched_sample(qless, run.id, MANY + 1)[-1] == child


def test_a_request_that_dies_mid_chunk_leaves_the_chunk_to_the_next_step(
    lua: LuaScript, redis_client: redis.Redis, qless: Client, operator: HttpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jids = plant_waiting(lua, redis_client, MANY, queue="q")
    run_id = run_id_of(start(operator, {"queue": "q", "state": "waiting"}, "track"))
    collect(qless, operator, run_id)
    real = bulk_all.each_job
    monkeypatch.setattr(bulk_all, "each_job", lambda *args: (_ for _ in ()).throw(
        redis.ConnectionError("the request died here")))
    operator.raise_request_exception = False
    assert step(operator, run_id, confirmed="yes").status_code == 503  # Redis gone, said so
    died = bulk_runs.load(qless, run_id)
    assert died is not None and (died.applied, died.done) == (0, 0)  # nothing counted taken
    monkeypatch.setattr(bulk_all, "each_job", real)
    finished = apply_all(qless, operator, run_id)
    assert (finished.done, finished.problems) == (MANY, 0)
    assert set(qless.tracked_jids(0, MANY + 1)) == set(jids)
