"""The example project end to end, in subprocesses, as a user would run it.

Its manage.py commands run against the suite's redis-server (`check`, `migrate`,
`qless_recur`, `seed_demo`, burst workers) and the jobs are then read back from Redis
through django_qless.core. `run.py` is run too: `--smoke` with its embedded redis-server,
and the serving mode, stopped with SIGINT like Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from django_qless.core import Client, Job
from tests.redis_harness import RedisServer, free_port
from tests.support import wait_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
PURGE = "newsletter.qless_jobs.purge_old_exports"

Manage = Callable[..., subprocess.CompletedProcess[str]]


def newcomer_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that configures the example, plus `extra`.

    What a newcomer's shell holds: no QLESS_*, DJANGO_* or DATABASE_URL, so the example's
    own defaults apply.
    """
    env = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("QLESS_", "DJANGO_", "DATABASE_URL"))
    }
    # The tree under test, whichever django_qless is installed.
    path = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(PYTHONUNBUFFERED="1", PYTHONPATH=path, **extra)
    return env


def clean_environment(**extra: str) -> dict[str, str]:
    """`newcomer_environment` for manage.py: its settings module, and `extra`."""
    # Explicit values win over an example_project/.env a developer may have.
    return newcomer_environment(DJANGO_SETTINGS_MODULE="config.settings",
                                QLESS_IMMEDIATE="false", **extra)


@pytest.fixture
def example_env(redis_client: redis.Redis, redis_server: RedisServer,
                tmp_path: Path) -> dict[str, str]:
    """Settings for the example: the suite's (flushed) Redis and a fresh SQLite file."""
    return clean_environment(QLESS_URL=redis_server.url,
                             DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")


@pytest.fixture
def manage(example_env: dict[str, str]) -> Manage:
    """Run `manage.py <args>` of the example; fails the test on a non-zero exit."""

    def run(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=EXAMPLE, env=example_env,
            capture_output=True, text=True, timeout=90, check=False,
        )
        assert result.returncode == expect, (
            f"manage.py {' '.join(args)} exited {result.returncode}\n"
            f"{result.stdout}\n{result.stderr}"
        )
        return result

    return run


@pytest.fixture
def qless(redis_client: redis.Redis) -> Client:
    """A core client on the suite's Redis, to read what the example's processes did."""
    return Client(redis_client)  # type: ignore[arg-type]


def jobs_by_jid(qless: Client, jids: list[str]) -> dict[str, Job]:
    """The jobs, fetched again."""
    return {job.jid: job for job in qless.get_jobs(jids)}


def states(qless: Client, jids: list[str]) -> list[str]:
    """The state of each job, in order ("missing" for unknown jids)."""
    found = jobs_by_jid(qless, jids)
    return [found[jid].state if jid in found else "missing" for jid in jids]


@pytest.mark.slow
def test_example_project_jobs_reach_their_states(
    manage: Manage, qless: Client, tmp_path: Path
) -> None:
    manage("check")
    manage("migrate", "--noinput", "-v", "0")
    recur = manage("qless_recur")
    assert PURGE in recur.stdout and "1 create" in recur.stdout
    manifest_path = tmp_path / "jobs.json"
    manage("seed_demo", "--quick", "--manifest", str(manifest_path))
    manifest: dict[str, Any] = json.loads(manifest_path.read_text())
    manage("qless_worker", "--burst")

    # After one burst: everything that needs no retry has ended.
    assert set(states(qless, manifest["welcome"])) == {"complete"}
    assert states(qless, [manifest["import_ok"], manifest["export"]]) == ["complete"] * 2
    bounced = jobs_by_jid(qless, manifest["welcome_bounced"])
    assert [job.failure.group for job in bounced.values() if job.failure] == [
        "emails-MailboxNotFoundError"
    ]
    bad_import = qless.get_job(manifest["import_bad"])
    assert bad_import is not None and bad_import.state == "failed"
    assert bad_import.failure is not None
    assert bad_import.failure.group == "imports-FeedFormatError"
    assert "FeedFormatError" in bad_import.failure.message
    assert qless.failed() == {"emails-MailboxNotFoundError": 1, "imports-FeedFormatError": 1}

    # Greylisted welcomes were refused once: retried with a backoff of about 2 s, so
    # scheduled (unless a slow machine kept the burst going that long).
    retried = jobs_by_jid(qless, manifest["welcome_retried"])
    assert len(retried) == 2
    for job in retried.values():
        assert (job.retries, job.remaining) == (3, 2)
        if job.state != "complete":
            assert job.state == "scheduled"
            assert job.failure is not None
            assert job.failure.group == "emails-MailServerBusyError"

    # The long export wrote its progress into its history, one entry per batch of 5.
    export = qless.get_job(manifest["export"])
    assert export is not None and export.tracked
    progress = [entry.extra for entry in export.history if entry.what == "progress"]
    # It lists the subscribers there are when it runs: before, during or after the partner
    # import (another queue, another worker process) added its 3.
    [total] = {entry["of"] for entry in progress}
    assert manifest["subscribers_at_send"] <= total <= manifest["subscribers_at_send"] + 3
    assert [entry["rows"] for entry in progress] == [min(n, total)
                                                     for n in range(5, total + 5, 5)]

    # The issue due tomorrow holds its pipeline: render scheduled, the rest waits on it.
    assert states(qless, [manifest["scheduled_issue_render"]]) == ["scheduled"]
    assert set(states(qless, manifest["scheduled_issue_waiting"])) == {"depends"}
    later_finish = qless.get_job(manifest["scheduled_issue_waiting"][-1])
    assert later_finish is not None and len(later_finish.dependencies) >= 2

    # The paused archive queue keeps its jobs waiting; the purge recurs hourly.
    assert set(states(qless, manifest["archive"])) == {"waiting"}
    assert qless.queue("archive").paused
    templates = [qless.recurring(jid) for jid in qless.queue("maintenance").jobs("recurring")]
    assert [(t.klass, t.interval) for t in templates if t] == [(PURGE, 3600)]

    # Burst again once the backoff (about 2 s) has passed: the retries complete.
    deadline = time.monotonic() + 30
    while set(states(qless, [*manifest["welcome_retried"], *manifest["sent_issue_jobs"]])) != {
        "complete"
    }:
        assert time.monotonic() < deadline, "retried jobs did not complete"
        time.sleep(0.5)
        manage("qless_worker", "--burst")
    for job in jobs_by_jid(qless, manifest["welcome_retried"]).values():
        assert job.failure is None
        pops = [entry.when for entry in job.history if entry.what == "popped"]
        assert len(pops) == 2
        assert pops[1] - pops[0] >= 1  # the backoff (>= 1.8 s; history keeps whole seconds)

    finish = qless.get_job(manifest["sent_issue_finish"])
    assert finish is not None and finish.tracked and finish.state == "complete"
    assert set(states(qless, manifest["archive"])) == {"waiting"}
    # The Django Task ran in the same worker; its summary is kept in the completed job.
    digest = qless.get_job(manifest["digest"])
    assert digest is not None and digest.state == "complete"
    assert digest.klass == "newsletter.tasks.weekly_digest"
    assert digest.data["result"]["days"] == 7 and digest.data["result"]["attempt"] == 1
    # The example's own checker agrees, including what the jobs wrote to the database.
    verdict = manage("verify_demo", str(manifest_path))
    assert re.search(r"All \d+ demo checks passed", verdict.stdout)


@pytest.mark.slow
def test_verify_demo_fails_while_jobs_have_not_run(manage: Manage, tmp_path: Path) -> None:
    manage("migrate", "--noinput", "-v", "0")
    manifest_path = tmp_path / "jobs.json"
    manage("seed_demo", "--quick", "--manifest", str(manifest_path))
    verdict = manage("verify_demo", str(manifest_path), expect=1)
    assert "FAIL welcome email" in verdict.stdout
    assert "state waiting, expected complete" in verdict.stdout


@pytest.mark.slow
def test_run_py_smoke_with_embedded_redis(tmp_path: Path) -> None:
    data_dir = tmp_path / "redis"
    result = subprocess.run(
        [sys.executable, str(EXAMPLE / "run.py"), "--smoke", "--data-dir", str(data_dir)],
        env=newcomer_environment(), capture_output=True, text=True, timeout=110, check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"Starting the embedded Redis \(redis-server \d+\.\d+", output)
    assert re.search(r"All \d+ demo checks passed", output)
    assert "/admin/newsletter/issue/ shows" in output
    assert "/admin/django_qless/failure/ shows 'imports-FeedFormatError'" in output
    assert "/admin/django_qless/recurringjob/ shows" in output
    assert "Smoke run passed" in output
    # The server it started is gone, and so is the file naming it.
    assert "Stopped the embedded Redis" in output
    assert not (data_dir / "url").exists()


@pytest.fixture
def runlib(monkeypatch: pytest.MonkeyPatch) -> Any:
    """run.py's helper package, imported the way run.py imports it."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import runlib.redis_server  # noqa: PLC0415 - only importable with example_project on the path

    return runlib.redis_server


def test_embedded_redis_is_reused_only_when_it_is_ours(
    runlib: Any, tmp_path: Path, redis_server: RedisServer
) -> None:
    lines: list[str] = []
    binary = runlib.redis_server_binary()
    first = runlib.EmbeddedRedis(tmp_path, binary, lines.append)
    url = first.start_or_reuse()
    try:
        assert (tmp_path / "url").read_text().strip() == url
        assert redis.Redis.from_url(url).ping()
        second = runlib.EmbeddedRedis(tmp_path, binary, lines.append)
        assert second.start_or_reuse() == url
        assert second.process is None  # reused, not started
        second.stop()  # a reused server is left running
        assert redis.Redis.from_url(url).ping()
        assert lines[-1] == f"==> Reusing the embedded Redis at {url}"
    finally:
        first.stop()
    assert not (tmp_path / "url").exists()
    # A file naming a server that is not ours (another config file) is not trusted.
    (tmp_path / "url").write_text(redis_server.url + "\n")
    third = runlib.EmbeddedRedis(tmp_path, binary, lines.append)
    assert third.running_url() is None
    try:
        assert third.start_or_reuse() != redis_server.url
        assert third.process is not None
    finally:
        third.stop()


def test_dotenv_value_reads_the_example_env_format(runlib: Any, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# QLESS_URL=redis://commented\nexport OTHER=1\n"
                        "QLESS_URL = 'redis://cache:6379/2'\n")
    assert runlib.dotenv_value(env_file, "QLESS_URL") == "redis://cache:6379/2"
    assert runlib.dotenv_value(env_file, "OTHER") == "1"
    assert runlib.dotenv_value(env_file, "MISSING") is None
    assert runlib.dotenv_value(tmp_path / "absent", "QLESS_URL") is None


def processes_with(marker: str) -> list[int]:
    """pids of live processes whose environment contains `marker` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique environment value, to find (and finally kill) every process of one run."""
    value = f"example-test-{uuid.uuid4().hex}"
    yield value
    for pid in processes_with(value):
        os.kill(pid, signal.SIGKILL)


def wait_until_running(run: subprocess.Popen[str], log: Path) -> str:
    """run.py's output once it says the example is running (fails if it exits first)."""
    deadline = time.monotonic() + 120
    while "Press Ctrl-C to stop" not in log.read_text():  # the banner's last line
        assert run.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    return log.read_text()


def serve_and_stop(tmp_path: Path, marker: str, shell: str, stop: signal.Signals) -> str:
    """Run `python example_project/run.py` (on a free port, its Redis in `tmp_path`) through
    `bash -c`, after the `shell` commands, from the repository root in a newcomer's
    environment; check that everything runs, stop it with `stop` and check that everything
    is gone. Returns its output."""
    port = free_port()
    data_dir = tmp_path / "redis"
    env = newcomer_environment(EXAMPLE_TEST_MARKER=marker,
                               DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    log = tmp_path / "run.log"
    with log.open("w") as out:
        command = (f"{shell}exec {sys.executable} example_project/run.py --port {port} "
                   f"--data-dir {data_dir}")
        run = subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=env, stdout=out,
                               stderr=subprocess.STDOUT, text=True)
    try:
        text = wait_until_running(run, log)
        assert f"Admin   http://127.0.0.1:{port}/admin/" in text
        assert "Login   admin / qless-demo" in text
        assert "Worker  manage.py qless_worker --reload (restarts when code changes)" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=10) as page:
            assert page.status == 200
        url = (data_dir / "url").read_text().strip()
        assert url in text
        embedded = redis.Redis.from_url(url)
        assert embedded.ping()
        # The worker runs the demo's jobs, as one process under --reload whatever the
        # example's settings say.
        worker_log = data_dir / "worker.log"
        wait_for(lambda: "completed in" in worker_log.read_text(), timeout=60)
        assert "--reload runs one worker process (PROCESSES = 2" in worker_log.read_text()
        # run.py, the worker and its reloaded child, runserver and its reloaded child
        # (redis-server rewrites its environment for its process title, so it is checked
        # through its port instead).
        assert len(processes_with(marker)) >= 5
    finally:
        run.send_signal(stop)
        run.wait(timeout=60)
    output = log.read_text()
    assert run.returncode == 0, output
    assert "Stopped the embedded Redis" in output
    assert processes_with(marker) == []
    with pytest.raises(redis.ConnectionError):
        embedded.ping()
    assert not (data_dir / "url").exists()
    return output


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_run_py_serves_the_admin_and_ctrl_c_stops_everything(
    tmp_path: Path, marker: str
) -> None:
    # The README's command with the example's defaults (two worker processes in settings).
    output = serve_and_stop(tmp_path, marker, "", signal.SIGINT)
    assert "Traceback" not in output
    # The README shows what it printed, but for the ports and where its Redis lives.
    printed = [line.replace(str(tmp_path / "redis"), "example_project/.redis")
               for line in banner(output)]
    assert without_ports(printed) == without_ports(readme_block("run-output"))


def readme_block(name: str) -> list[str]:
    """The lines of the fenced block that follows `<!-- name -->` in README.md."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {name} -->") + 2  # past the marker and the opening fence
    return lines[start:lines.index("```", start)]


#: A line of the development server's request log: `[27/Nov/2026 06:23:53] "GET ...`.
REQUEST_LOG = re.compile(r'^\[\d{2}/\w{3}/\d{4} [\d:]{8}\] "')


def banner(output: str) -> list[str]:
    """run.py's lines from "... is running" to "Press Ctrl-C ..."."""
    # The development server's request log shares the output: a request the test sends
    # as soon as the admin answers may be logged between two banner lines.
    lines = [line for line in output.splitlines() if not REQUEST_LOG.match(line)]
    start = lines.index("django_qless example is running")
    end = next(i for i, line in enumerate(lines) if line.startswith("Press Ctrl-C"))
    return lines[start:end + 1]


def without_ports(lines: list[str]) -> list[str]:
    """The lines with every 127.0.0.1 port replaced by `PORT`."""
    return [re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line) for line in lines]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_run_py_started_with_sigint_ignored_serves_and_stops_on_sigterm(
    tmp_path: Path, marker: str
) -> None:
    # A background job of a shell: SIGINT ignored, inherited by everything it starts.
    output = serve_and_stop(tmp_path, marker, "trap '' INT; ", signal.SIGTERM)
    assert "Traceback" not in output
