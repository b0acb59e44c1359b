"""The stored return value (JSON, size-bounded) and the class path read from a traceback."""

from __future__ import annotations

import math
import traceback
from typing import Any

import pytest

from django_qless.tasks import ResultNotStorableError, encode_result, with_result
from django_qless.tasks.errors import path_from_traceback


def test_a_json_value_is_stored_under_result() -> None:
    value = {"a": [1, 2.5, None, True]}
    assert encode_result(value, 100) == {"result": value}


def test_django_s_normalisation_applies_first() -> None:
    assert encode_result((1, b"x"), 100) == {"result": [1, "x"]}


@pytest.mark.parametrize(
    "value",
    [object(), {1, 2}, math.inf, math.nan, {1: "int key"}, b"\xff"],
    ids=["object", "set", "inf", "nan", "int-key", "non-utf8-bytes"],
)
def test_values_json_cannot_hold_are_refused(value: Any) -> None:
    with pytest.raises(ResultNotStorableError):
        encode_result(value, 1000)


def test_a_value_over_the_limit_is_refused_naming_the_option() -> None:
    assert encode_result("é" * 4, 10) == {"result": "éééé"}  # 8 bytes + quotes
    with pytest.raises(ResultNotStorableError, match="RESULT_MAX_BYTES"):
        encode_result("é" * 5, 10)


def test_with_result_keeps_the_call() -> None:
    data = {"args": [1], "kwargs": {}, "task": {"backend": "default"}}
    assert with_result(data, 2, 100) == {**data, "result": 2}


class LocalError(Exception):
    """An exception with a module path."""


def formatted(exc: BaseException) -> str:
    """A raised exception's traceback, as the worker formats it."""
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - the point is to catch it
        return "".join(traceback.format_exception(caught))


def test_the_path_is_read_from_the_exception_line() -> None:
    assert path_from_traceback(formatted(LocalError("x"))) == f"{__name__}.LocalError"
    assert path_from_traceback(formatted(KeyError("k"))) == "builtins.KeyError"
    assert path_from_traceback(formatted(ValueError())) == "builtins.ValueError"


def test_a_message_spanning_lines_does_not_confuse_it() -> None:
    assert path_from_traceback(formatted(ValueError("one\ntwo: three"))) == "builtins.ValueError"


def test_the_last_of_chained_exceptions_is_read() -> None:
    try:
        try:
            raise KeyError("first")
        except KeyError as exc:
            raise LocalError("second") from exc
    except LocalError as caught:
        text = "".join(traceback.format_exception(caught))
    assert path_from_traceback(text) == f"{__name__}.LocalError"


def test_text_naming_no_exception_gives_none() -> None:
    assert path_from_traceback('Job exhausted retries in queue "default"') is None
    assert path_from_traceback("") is None
