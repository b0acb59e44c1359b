"""mypy sees through @qless_job: `.enqueue()` takes the function's parameters, minus `job`;
an `async def` function's `.call()` is typed with its awaited value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = '''
from django_qless import qless_job
from django_qless.core import Job


@qless_job
def bare(a: int, b: str = "x") -> str:
    return b * a


@qless_job(queue="q", priority=1)
def with_options(a: int) -> int:
    return a


@qless_job(takes_job=True)
def with_job(job: Job, a: int) -> int:
    return a


reveal_type(bare.enqueue(1, b="y"))
reveal_type(bare.call(1))
reveal_type(with_options.using(queue="other").call(2))
reveal_type(with_job.call(3))
bare.enqueue("not an int")
with_options.enqueue(1, 2)
with_job.enqueue(None, 3)


@qless_job
async def coro(a: int) -> int:
    return a


@qless_job(queue="q", store_result=True)
async def coro_with_options(a: int) -> str:
    return str(a)


reveal_type(coro.call(1))
reveal_type(coro_with_options.call(1))
'''


@pytest.mark.slow
def test_enqueue_and_call_are_typed_from_the_function(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(SAMPLE, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(sample)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    # Older mypy spells builtins out ("builtins.str"); compare without it.
    lines = [
        line.split(": ", 1)[1].replace("builtins.", "")
        for line in result.stdout.splitlines() if ": " in line
    ]
    assert lines == [
        'note: Revealed type is "str"',
        'note: Revealed type is "str"',
        'note: Revealed type is "int"',
        'note: Revealed type is "int"',
        'error: Argument 1 to "enqueue" of "JobDefinition" has incompatible type "str"; '
        'expected "int"  [arg-type]',
        'error: Too many arguments for "enqueue" of "JobDefinition"  [call-arg]',
        # `job` is not an enqueue parameter: None lands on `a`, and 3 is one too many.
        'error: Too many arguments for "enqueue" of "JobDefinition"  [call-arg]',
        'error: Argument 1 to "enqueue" of "JobDefinition" has incompatible type "None"; '
        'expected "int"  [arg-type]',
        # An async function's value is the awaited one: the worker awaits it.
        'note: Revealed type is "int"',
        'note: Revealed type is "str"',
    ], result.stdout + result.stderr
