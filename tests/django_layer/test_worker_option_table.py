"""The worker option table drives both `QLESS['WORKER']` and the `qless_worker` arguments."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.core.management.base import CommandError, CommandParser

from django_qless.conf import (
    WORKER_KEYS,
    WORKER_OPTIONS,
    WorkerOption,
    WorkerSettings,
    parse,
    worker_option,
)
from django_qless.conf.worker_table import Choice, Integer, Kind, QueueList, Seconds
from django_qless.management.commands import qless_worker
from django_qless.worker import WorkerOptions

KEYED = [option for option in WORKER_OPTIONS if option.key is not None]
COMMAND_ONLY = [option for option in WORKER_OPTIONS if option.key is None]


def parser() -> CommandParser:
    """The argument parser of `manage.py qless_worker`."""
    return qless_worker.Command().create_parser("manage.py", "qless_worker")


def sample(kind: Kind) -> tuple[Any, str, Any, Any, str]:
    """(good setting, good argument, the value both give, bad setting, bad argument)."""
    if isinstance(kind, Integer):
        return kind.minimum, str(kind.minimum), kind.minimum, kind.minimum - 1, "x"
    if isinstance(kind, Seconds):
        bad = 0 if kind.above_zero else -1
        return 2, "2", 2.0, bad, str(bad)
    if isinstance(kind, Choice):
        return kind.choices[-1], kind.choices[-1], kind.choices[-1], "nope", "nope"
    if isinstance(kind, QueueList):
        return ["a", "b"], "a,b", ("a", "b"), "a", ","
    raise AssertionError(f"no sample for {kind!r}")


def given(*argv: str) -> dict[str, Any]:
    """The `WorkerOptions` fields a command line gives."""
    return qless_worker._given(vars(parser().parse_args(argv)))


def test_names_flags_and_keys_are_unique() -> None:
    names = [option.name for option in WORKER_OPTIONS]
    flags = [flag for option in WORKER_OPTIONS for flag in option.flags]
    assert len(set(names)) == len(names)
    assert len(set(flags)) == len(flags)
    assert WORKER_KEYS == tuple(option.key for option in KEYED)
    assert len(set(WORKER_KEYS)) == len(WORKER_KEYS)


def test_settings_and_options_take_their_fields_and_defaults_from_the_table() -> None:
    settings_fields = {field.name: field for field in dataclasses.fields(WorkerSettings)}
    assert set(settings_fields) == {option.name for option in KEYED} | {"heartbeat_interval"}
    option_fields = {field.name: field for field in dataclasses.fields(WorkerOptions)}
    for option in WORKER_OPTIONS:
        if not option.worker:
            assert option.name not in option_fields, option.name
        elif option.name != "queues":  # the one required field: no default
            assert option_fields[option.name].default == option.default, option.name
            if option.name in settings_fields:
                assert settings_fields[option.name].default == option.default, option.name


@pytest.mark.parametrize("option", KEYED, ids=lambda option: option.key)
def test_a_keyed_option_is_read_from_settings_with_the_table_default(option: WorkerOption) -> None:
    settings, problems = parse({})
    assert settings is not None and not problems
    expected = ("default",) if option.name == "queues" else option.default
    assert getattr(settings.worker, option.name) == expected
    good, _, value, _, _ = sample(option.kind)
    settings, problems = parse({"WORKER": {option.key: good}})
    assert problems == ()
    assert settings is not None and getattr(settings.worker, option.name) == value


@pytest.mark.parametrize("option", KEYED, ids=lambda option: option.key)
def test_a_keyed_option_is_a_flag_that_lets_the_setting_through(option: WorkerOption) -> None:
    actions = {action.dest: action for action in parser()._actions}
    assert tuple(actions[option.name].option_strings) == option.flags
    assert given()[option.name] is None  # not given: from_settings keeps the setting
    _, text, value, _, _ = sample(option.kind)
    for flag in option.flags:
        assert given(flag, text)[option.name] == value


@pytest.mark.parametrize("option", KEYED, ids=lambda option: option.key)
def test_a_bad_value_is_refused_on_both_sides(option: WorkerOption) -> None:
    _, _, _, bad, bad_text = sample(option.kind)
    settings, problems = parse({"WORKER": {option.key: bad}})
    assert settings is None
    assert [(p.id, p.key) for p in problems] == [
        ("django_qless.E003", f"QLESS['WORKER'][{option.key!r}]")
    ]
    with pytest.raises(CommandError, match=option.flags[0]):
        parser().parse_args([option.flags[0], bad_text])


@pytest.mark.parametrize("option", COMMAND_ONLY, ids=lambda option: option.name)
def test_a_command_only_option_has_the_table_default_and_no_key(option: WorkerOption) -> None:
    assert getattr(parser().parse_args([]), option.name) == option.default
    settings, problems = parse({"WORKER": {option.name.upper(): option.default}})
    assert settings is None
    assert [p.id for p in problems] == ["django_qless.E002"]


def test_an_unknown_key_is_refused_naming_every_known_one() -> None:
    _, problems = parse({"WORKER": {"THREADS": 2}})
    assert [(p.id, p.key) for p in problems] == [
        ("django_qless.E002", "QLESS['WORKER']['THREADS']")
    ]
    assert str(WORKER_KEYS) in problems[0].message


def test_positional_queues_come_before_the_listed_ones() -> None:
    assert given("a", "--queues", "b,c", "--queues", "d")["queues"] == ("a", "b", "c", "d")


def test_the_command_only_options_of_the_command_are_not_worker_fields() -> None:
    assert "reload" not in given() and "sync_recurring" not in given()
    assert given("--worker-name", "w", "--burst")["name"] == "w"
    assert worker_option("name").flags == ("--worker-name",)


def test_the_command_line_wins_over_the_setting(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": qless_url, "HEARTBEAT": 7, "WORKER": {"PREFETCH": 0,
                                                                   "PROCESSES": 3}}
    options = WorkerOptions.from_settings(**given("--prefetch", "2"))
    assert (options.prefetch, options.processes, options.heartbeat_interval) == (2, 3, 7.0)
    options = WorkerOptions.from_settings(**given("--heartbeat-interval", "1.5"))
    assert options.heartbeat_interval == 1.5


@pytest.mark.parametrize("argv", [["bad queue!"], ["--queues", "a,bad queue!"]])
def test_command_line_queue_names_are_checked_as_the_setting_checks_them(argv: list[str]) -> None:
    _, problems = parse({"WORKER": {"QUEUES": ["bad queue!"]}})
    assert [p.message.split(":")[0] for p in problems] == ["has an invalid queue name"]
    with pytest.raises(CommandError, match="invalid queue name 'bad queue!'"):
        parser().parse_args(argv)
