"""The admin's one masking rule: JSON by key, free text by pattern and by `key=value` pairs."""

from __future__ import annotations

from typing import Any

import pytest

from django_qless.admin import masking, presenters
from django_qless.admin.attempts import attempts_of
from django_qless.admin.masking import MASK, build
from django_qless.conf import DEFAULT_MASKED_DATA_KEYS, DEFAULT_MASKED_PATTERNS, parse
from django_qless.core import Client

RULE = build(DEFAULT_MASKED_DATA_KEYS, DEFAULT_MASKED_PATTERNS)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("login failed: password=hunter2 user=bob", f"login failed: password={MASK} user=bob"),
        ("PASSWORD: hunter2", f"PASSWORD: {MASK}"),
        ('{"db_password": "hun\\"ter2", "n": 1}', f'{{"db_password": "{MASK}", "n": 1}}'),
        ("{'api_key': 'abc 123', 'n': 2}", f"{{'api_key': '{MASK}', 'n': 2}}"),
        ("GET /x?token=zz9&page=1", f"GET /x?token={MASK}&page=1"),
        ("Authorization: Bearer abcdefgh12345", f"Authorization: {MASK}"),
        ("redis://user:s3cr3t@cache:6379/0 refused", f"redis://user:{MASK}@cache:6379/0 refused"),
        ("key AKIAIOSFODNN7EXAMPLE used", f"key {MASK} used"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nok", f"{MASK}\nok"),
        ("ValueError: nothing secret here", "ValueError: nothing secret here"),
    ],
)
def test_free_text_is_masked_by_pairs_and_patterns(text: str, shown: str) -> None:
    assert RULE.text(text) == shown


def test_a_pattern_without_groups_masks_its_match_and_with_groups_only_them() -> None:
    rule = build((), (r"card \d{4}", r"pin (\d+) of (\w+)"))
    assert rule.text("card 4111 and pin 1234 of bob") == f"{MASK} and pin {MASK} of {MASK}"


def test_json_strings_are_masked_as_text_too() -> None:
    data = {"note": "password=x", "Token": 5, "list": [{"secret_key": 1, "ok": "fine"}]}
    assert RULE.data(data) == {
        "note": f"password={MASK}", "Token": MASK, "list": [{"secret_key": MASK, "ok": "fine"}],
    }


def test_without_view_job_data_text_and_data_are_left_out() -> None:
    hidden = masking.Redaction(RULE, shows_data=False)
    assert hidden.text("ValueError: password=x") == ""
    assert hidden.data({"a": 1}) is None


def test_history_and_attempts_are_masked_or_hidden(qless: Client) -> None:
    jid = qless.queue("q").put("k", {})
    job = qless.queue("q").pop()[0]
    job.log("task-error", {"traceback": "Traceback\nKeyError: password=hunter2",
                           "exception_class_path": "builtins.KeyError"})
    job.log("login password: hunter2", {"url": "redis://u:hunter2@h/0"})
    job.fail("q-KeyError", "KeyError: password=hunter2")
    failed = qless.get_job(jid)
    assert failed is not None
    for shows_data in (True, False):
        redaction = masking.Redaction(RULE, shows_data)
        texts = [str(entry) for entry in presenters.timeline(failed.history, redaction)]
        texts += [str(attempt) for attempt in attempts_of(failed, redaction)]
        texts.append(presenters.job_row(failed, 0, redaction).summary)
        assert "hunter2" not in " ".join(texts)
        [attempt] = attempts_of(failed, redaction)
        assert attempt.error is not None and attempt.error.exception == "builtins.KeyError"
        assert attempt.error.group == "q-KeyError"
        assert bool(attempt.error.traceback) is shows_data


@pytest.mark.parametrize(
    ("patterns", "problem"),
    [
        ("not-a-list", "must be a list of regular expressions"),
        (["(unclosed"], "is not a valid regular expression"),
        ([".*"], "matches the empty text"),
        ([""], "is not a non-empty string"),
        ([3], "is not a non-empty string"),
    ],
)
def test_bad_masked_patterns_are_refused_when_the_setting_is_read(
    patterns: Any, problem: str
) -> None:
    settings, problems = parse({"ADMIN": {"MASKED_PATTERNS": patterns}})
    assert settings is None
    assert [p.key for p in problems] == ["QLESS['ADMIN']['MASKED_PATTERNS']"]
    assert problem in problems[0].message


def test_masked_patterns_default_and_override() -> None:
    default, _ = parse({})
    assert default is not None and default.admin.masked_patterns == DEFAULT_MASKED_PATTERNS
    custom, problems = parse({"ADMIN": {"MASKED_PATTERNS": [r"tok_\w+"]}})
    assert problems == () and custom is not None
    assert custom.admin.masked_patterns == (r"tok_\w+",)
