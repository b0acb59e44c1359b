"""The QLESS setting: defaults, every key, malformed values named by key, lazy re-reading."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_qless.conf import (
    ConnectionSettings,
    QlessSettings,
    WorkerSettings,
    get_settings,
    parse,
)
from django_qless.exceptions import QlessConfigurationError
from django_qless.redis_urls import SentinelSettings, parse_sentinel_url


def parsed(raw: Any) -> QlessSettings:
    """Parse a raw setting that must be valid."""
    result, problems = parse(raw)
    assert problems == ()
    assert result is not None
    return result


def test_defaults_when_empty() -> None:
    result = parsed({})
    assert result.default_queue == "default"
    assert result.immediate is False
    assert result.enqueue_on_commit is True
    assert result.max_payload_bytes == 1_048_576
    assert result.heartbeat is None
    assert dict(result.connections) == {
        "default": ConnectionSettings("default", "redis://localhost:6379/0", {}, (), None)
    }
    assert result.worker == WorkerSettings(queues=("default",))
    assert result.worker.strategy == "ordered"
    assert result.worker.processes == 1
    assert result.worker.poll_interval == 5.0
    assert result.worker.shutdown_timeout == 30.0


def test_every_key_is_read() -> None:
    result = parsed({
        "URL": "redis://cache:6380/2",
        "OPTIONS": {"socket_timeout": 5, "max_connections": 20},
        "CONNECTIONS": {"reports": {"URL": "redis://reports:6379/0", "QUEUES": ["reports"]}},
        "DEFAULT_QUEUE": "main",
        "IMMEDIATE": True,
        "ENQUEUE_ON_COMMIT": False,
        "MAX_PAYLOAD_BYTES": 4096,
        "HEARTBEAT": 12.5,
        "WORKER": {
            "QUEUES": ["main", "reports"],
            "STRATEGY": "round-robin",
            "PROCESSES": 4,
            "MAX_JOBS": 1000,
            "MAX_MEMORY_MB": 512,
            "TIME_LIMIT": 300,
            "SHUTDOWN_TIMEOUT": 10,
            "POLL_INTERVAL": 2,
        },
    })
    assert result.default_queue == "main"
    assert result.immediate is True
    assert result.enqueue_on_commit is False
    assert result.max_payload_bytes == 4096
    assert result.heartbeat == 12.5
    default = result.connections["default"]
    assert default.url == "redis://cache:6380/2"
    assert dict(default.options) == {"socket_timeout": 5, "max_connections": 20}
    assert result.connections["reports"].queues == ("reports",)
    assert result.worker == WorkerSettings(
        queues=("main", "reports"), strategy="round-robin", processes=4, max_jobs=1000,
        max_memory_mb=512, time_limit=300.0, shutdown_timeout=10.0, poll_interval=2.0,
        heartbeat_interval=12.5,
    )


def test_worker_queues_default_to_the_default_queue() -> None:
    assert parsed({"DEFAULT_QUEUE": "main"}).worker.queues == ("main",)


def test_connections_dict_can_define_the_default() -> None:
    result = parsed({"CONNECTIONS": {"default": {"URL": "unix:///run/redis.sock?db=3"}}})
    assert result.connections["default"].url == "unix:///run/redis.sock?db=3"


def test_settings_are_frozen() -> None:
    result = parsed({})
    with pytest.raises(AttributeError):
        result.immediate = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.connections["x"] = result.connections["default"]  # type: ignore[index]


MALFORMED = [
    ([], "QLESS", "django_qless.E001"),
    ({"URLS": "redis://x"}, "QLESS['URLS']", "django_qless.E002"),
    ({"URL": 6379}, "QLESS['URL']", "django_qless.E004"),
    ({"URL": "http://localhost"}, "QLESS['URL']", "django_qless.E004"),
    ({"URL": "redis://localhost:notaport/0"}, "QLESS['URL']", "django_qless.E004"),
    ({"URL": "redis+sentinel://h1:26379"}, "QLESS['URL']", "django_qless.E004"),
    ({"OPTIONS": "socket_timeout=1"}, "QLESS['OPTIONS']", "django_qless.E003"),
    ({"OPTIONS": {"sockettimeout": 1}}, "QLESS['OPTIONS']['sockettimeout']", "django_qless.E007"),
    ({"OPTIONS": {"socket_timeout": "1"}}, "QLESS['OPTIONS']['socket_timeout']",
     "django_qless.E003"),
    ({"OPTIONS": {"max_connections": 2.5}}, "QLESS['OPTIONS']['max_connections']",
     "django_qless.E003"),
    ({"OPTIONS": {"retry_on_timeout": "yes"}}, "QLESS['OPTIONS']['retry_on_timeout']",
     "django_qless.E003"),
    ({"OPTIONS": {"ssl_certfile": "/x.pem"}}, "QLESS['OPTIONS']['ssl_certfile']",
     "django_qless.E007"),
    ({"SENTINEL_OPTIONS": {"password": "x"}}, "QLESS['SENTINEL_OPTIONS']", "django_qless.E003"),
    ({"SENTINEL_OPTIONS": {"pasword": "x"}, "URL": "redis+sentinel://h/m"},
     "QLESS['SENTINEL_OPTIONS']['pasword']", "django_qless.E007"),
    ({"CONNECTIONS": ["reports"]}, "QLESS['CONNECTIONS']", "django_qless.E003"),
    ({"CONNECTIONS": {"reports": "redis://r"}}, "QLESS['CONNECTIONS']['reports']",
     "django_qless.E003"),
    ({"CONNECTIONS": {"reports": {"URL": "redis://r", "QUEUE": ["a"]}}},
     "QLESS['CONNECTIONS']['reports']['QUEUE']", "django_qless.E002"),
    ({"CONNECTIONS": {"reports": {"URL": "ftp://r"}}},
     "QLESS['CONNECTIONS']['reports']['URL']", "django_qless.E004"),
    ({"CONNECTIONS": {"reports": {"QUEUES": ["reports"]}}},
     "QLESS['CONNECTIONS']['reports']['URL']", "django_qless.E004"),
    ({"CONNECTIONS": {"reports": {"URL": "redis://r", "QUEUES": "reports"}}},
     "QLESS['CONNECTIONS']['reports']['QUEUES']", "django_qless.E003"),
    ({"CONNECTIONS": {"reports": {"URL": "redis://r", "QUEUES": ["bad queue"]}}},
     "QLESS['CONNECTIONS']['reports']['QUEUES']", "django_qless.E003"),
    ({"URL": "redis://a", "CONNECTIONS": {"default": {"URL": "redis://b"}}}, "QLESS['URL']",
     "django_qless.E005"),
    ({"CONNECTIONS": {"a": {"URL": "redis://a", "QUEUES": ["q"]},
                      "b": {"URL": "redis://b", "QUEUES": ["q"]}}},
     "QLESS['CONNECTIONS']['b']['QUEUES']", "django_qless.E006"),
    ({"DEFAULT_QUEUE": "no spaces"}, "QLESS['DEFAULT_QUEUE']", "django_qless.E003"),
    ({"DEFAULT_QUEUE": None}, "QLESS['DEFAULT_QUEUE']", "django_qless.E003"),
    ({"IMMEDIATE": "true"}, "QLESS['IMMEDIATE']", "django_qless.E003"),
    ({"ENQUEUE_ON_COMMIT": 1}, "QLESS['ENQUEUE_ON_COMMIT']", "django_qless.E003"),
    ({"MAX_PAYLOAD_BYTES": 0}, "QLESS['MAX_PAYLOAD_BYTES']", "django_qless.E003"),
    ({"MAX_PAYLOAD_BYTES": True}, "QLESS['MAX_PAYLOAD_BYTES']", "django_qless.E003"),
    ({"HEARTBEAT": 0}, "QLESS['HEARTBEAT']", "django_qless.E003"),
    ({"HEARTBEAT": float("nan")}, "QLESS['HEARTBEAT']", "django_qless.E003"),
    ({"WORKER": []}, "QLESS['WORKER']", "django_qless.E003"),
    ({"WORKER": {"THREADS": 2}}, "QLESS['WORKER']['THREADS']", "django_qless.E002"),
    ({"WORKER": {"QUEUES": "default"}}, "QLESS['WORKER']['QUEUES']", "django_qless.E003"),
    ({"WORKER": {"STRATEGY": "random"}}, "QLESS['WORKER']['STRATEGY']", "django_qless.E003"),
    ({"WORKER": {"PROCESSES": 0}}, "QLESS['WORKER']['PROCESSES']", "django_qless.E003"),
    ({"WORKER": {"PROCESSES": "4"}}, "QLESS['WORKER']['PROCESSES']", "django_qless.E003"),
    ({"WORKER": {"MAX_JOBS": -1}}, "QLESS['WORKER']['MAX_JOBS']", "django_qless.E003"),
    ({"WORKER": {"MAX_MEMORY_MB": 1.5}}, "QLESS['WORKER']['MAX_MEMORY_MB']", "django_qless.E003"),
    ({"WORKER": {"TIME_LIMIT": 0}}, "QLESS['WORKER']['TIME_LIMIT']", "django_qless.E003"),
    ({"WORKER": {"SHUTDOWN_TIMEOUT": -1}}, "QLESS['WORKER']['SHUTDOWN_TIMEOUT']",
     "django_qless.E003"),
    ({"WORKER": {"POLL_INTERVAL": 0}}, "QLESS['WORKER']['POLL_INTERVAL']", "django_qless.E003"),
    ({"WORKER": {"PREFETCH": -1}}, "QLESS['WORKER']['PREFETCH']", "django_qless.E003"),
    ({"PUT_MEMORY_LIMIT": 1.5}, "QLESS['PUT_MEMORY_LIMIT']", "django_qless.E003"),
    ({"PUT_MEMORY_LIMIT": 0}, "QLESS['PUT_MEMORY_LIMIT']", "django_qless.E003"),
    ({"PUT_MEMORY_LIMIT": "90%"}, "QLESS['PUT_MEMORY_LIMIT']", "django_qless.E003"),
    ({"WORKER": {"PREFETCH": True}}, "QLESS['WORKER']['PREFETCH']", "django_qless.E003"),
]


@pytest.mark.parametrize(("raw", "key", "check_id"), MALFORMED)
def test_malformed_key_is_named(raw: Any, key: str, check_id: str) -> None:
    result, problems = parse(raw)
    assert result is None
    assert [(p.key, p.id) for p in problems] == [(key, check_id)]
    assert str(problems[0]).startswith(key + " ")


def test_every_problem_is_reported_not_just_the_first() -> None:
    _, problems = parse({"IMMEDIATE": 1, "WORKER": {"PROCESSES": 0}, "TYPO": 1})
    assert {p.key for p in problems} == {
        "QLESS['IMMEDIATE']", "QLESS['WORKER']['PROCESSES']", "QLESS['TYPO']",
    }


def test_get_settings_raises_naming_the_key(settings: Any) -> None:
    settings.QLESS = {"WORKER": {"STRATEGY": "lifo"}}
    with pytest.raises(QlessConfigurationError, match=r"QLESS\['WORKER'\]\['STRATEGY'\]") as err:
        get_settings()
    assert isinstance(err.value, ImproperlyConfigured)


def test_missing_setting_means_defaults(settings: Any) -> None:
    del settings.QLESS
    assert get_settings().connections["default"].url == "redis://localhost:6379/0"


def test_override_settings_is_reread(qless_url: str) -> None:
    assert get_settings().default_queue == "default"
    first = get_settings()
    assert get_settings() is first  # cached between changes
    with override_settings(QLESS={"URL": qless_url, "DEFAULT_QUEUE": "inner"}):
        assert get_settings().default_queue == "inner"
    assert get_settings().default_queue == "default"


def test_settings_fixture_change_is_reread(settings: Any, qless_url: str) -> None:
    assert get_settings().immediate is False
    settings.QLESS = {"URL": qless_url, "IMMEDIATE": True}
    assert get_settings().immediate is True


def test_sentinel_url_is_parsed() -> None:
    conn = parsed({
        "URL": "redis+sentinel://user:s%40cret@s1:26380,[::1],s3/mymaster/2",
        "SENTINEL_OPTIONS": {"password": "sentinel-pw", "socket_timeout": 0.5},
    }).connections["default"]
    assert conn.sentinel == SentinelSettings(
        hosts=(("s1", 26380), ("::1", 26379), ("s3", 26379)),
        service_name="mymaster", db=2, username="user", password="s@cret", tls=False,
        options={"password": "sentinel-pw", "socket_timeout": 0.5},
    )


def test_rediss_sentinel_means_tls_and_db_defaults_to_zero() -> None:
    sentinel = parse_sentinel_url("rediss+sentinel://h/svc")
    assert (sentinel.tls, sentinel.db, sentinel.username, sentinel.password) == (
        True, 0, None, None
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+sentinel://h:1/", "service name"),
        ("redis+sentinel://h/svc/0/extra", "service name"),
        ("redis+sentinel://h/svc/x", "database must be a number"),
        ("redis+sentinel://h:99999/svc", "bad port"),
        ("redis+sentinel://h1,,h2/svc", "empty Sentinel host"),
        ("redis+sentinel://h/svc?socket_timeout=1", "no query string"),
    ],
)
def test_bad_sentinel_urls(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sentinel_url(url)


def test_tls_options_are_accepted_with_rediss_only() -> None:
    options = {"ssl_certfile": "/c.pem", "ssl_cert_reqs": "required"}
    assert parsed({"URL": "rediss://h:6380/0", "OPTIONS": options}).connections["default"]
    assert parse({"URL": "redis://h:6379/0", "OPTIONS": options})[0] is None


def test_unix_socket_options() -> None:
    conn = parsed({"URL": "unix:///tmp/redis.sock?db=1", "OPTIONS": {"socket_timeout": 2}})
    assert conn.connections["default"].options == {"socket_timeout": 2}
    # socket_keepalive belongs to TCP connections: a unix socket connection refuses it.
    raw = {"URL": "unix:///tmp/redis.sock", "OPTIONS": {"socket_keepalive": True}}
    assert parse(raw)[0] is None
