"""config.get / config.set / config.unset (protocol §1.3, §3.13)."""

from __future__ import annotations

import pytest

from tests.lua.helpers import T0, expect_error

DEFAULTS = {
    "application": "qless",
    "heartbeat": 60,
    "grace-period": 10,
    "stats-history": 30,
    "histogram-history": 7,
    "jobs-history-count": 50000,
    "jobs-history": 604800,
}


def test_config_get_all_replies_defaults(lua):
    assert lua.json("config.get", T0) == DEFAULTS


def test_config_get_all_overlays_overrides_as_strings(lua):
    lua("config.set", T0, "heartbeat", 30)
    lua("config.set", T0, "custom", "x")
    assert lua.json("config.get", T0) == {**DEFAULTS, "heartbeat": "30", "custom": "x"}


@pytest.mark.parametrize(("key", "value"), sorted(DEFAULTS.items()))
def test_config_get_of_a_default(lua, key, value):
    reply = lua("config.get", T0, key)
    assert reply == value
    assert type(reply) is type(value)


def test_config_get_of_unknown_key_is_nil(lua):
    assert lua("config.get", T0, "max-job-history") is None


def test_config_set_stores_a_string_and_replies_nil(lua, redis_client):
    assert lua("config.set", T0, "heartbeat", 30) is None
    assert redis_client.hget("ql:config", "heartbeat") == "30"
    assert lua("config.get", T0, "heartbeat") == "30"


def test_config_unset_restores_the_default(lua, redis_client):
    lua("config.set", T0, "heartbeat", 30)
    assert lua("config.unset", T0, "heartbeat") is None
    assert not redis_client.hexists("ql:config", "heartbeat")
    assert lua("config.get", T0, "heartbeat") == 60


@pytest.mark.parametrize(("args", "name"), [([], "option"), (["heartbeat"], "value")])
def test_config_set_missing_argument(lua, args, name):
    expect_error(lua, rf'config\.set\(\): Arg "{name}" missing', "config.set", T0, *args)
