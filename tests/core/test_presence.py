"""Worker presence: published with an expiry, listed from the index, forgotten on request."""

from __future__ import annotations

import time

import redis

from django_qless.core import Client, keys
from django_qless.core.presence import (
    KlassCount,
    Presence,
    RunningJob,
    forget,
    listed,
    publish,
    withdraw,
)


def presence(name: str, seen: float = 1_700_000_000.0) -> Presence:
    """A presence with every field set."""
    return Presence(
        name=name, host="web-1", pid=4242, version="1.2.3", queues=("a", "b"),
        started=seen - 60, seen=seen, done=10, failed=2, rss_bytes=50_000_000,
        running=(RunningJob("j1", "app.jobs.send", seen - 3.5),),
        load=0.75, cpu_seconds=12.5, settings=(("strategy", "ordered"), ("prefetch", "1")),
        klasses=(KlassCount("app.jobs.send", 8, 2), KlassCount("app.jobs.sync", 2, 0)),
        swallowed=1, paused_by="alice",
    )


def test_a_published_presence_reads_back_whole(client: Client) -> None:
    publish(client, presence("w1"), ttl=30)
    (entry,) = listed(client)
    assert entry.name == "w1" and entry.presence == presence("w1")
    assert 0 < client.redis.pttl(keys.worker_presence("w1")) <= 30_000


def test_an_expired_presence_stays_listed_without_details(
    client: Client, redis_client: redis.Redis
) -> None:
    publish(client, presence("silent"), ttl=0.05)
    publish(client, presence("live", seen=1_700_000_100.0), ttl=30)
    time.sleep(0.1)
    entries = {entry.name: entry for entry in listed(client)}
    assert entries["silent"].presence is None
    assert entries["silent"].last_published == 1_700_000_000.0
    assert entries["live"].presence is not None
    assert [entry.name for entry in listed(client)] == ["live", "silent"]  # newest first


def test_forget_and_withdraw_remove_index_and_hash(client: Client) -> None:
    publish(client, presence("a"), ttl=30)
    publish(client, presence("b"), ttl=30)
    forget(client, ["a"])
    withdraw(client, "b")
    assert listed(client) == []
    assert client.redis.exists(keys.worker_presence("a"), keys.worker_presence("b")) == 0


def test_a_malformed_hash_reads_as_silent(client: Client, redis_client: redis.Redis) -> None:
    publish(client, presence("w"), ttl=30)
    redis_client.hset(keys.worker_presence("w"), "pid", "not a number")
    (entry,) = listed(client)
    assert entry.presence is None


def test_a_presence_from_an_older_version_reads_with_empty_details(client: Client) -> None:
    fields = presence("old").fields()
    for newer in ("load", "cpu_seconds", "settings", "klasses"):
        del fields[newer]
    client.redis.hset(keys.worker_presence("old"), mapping=fields)  # type: ignore[arg-type]
    client.redis.zadd(keys.WORKER_PRESENCE_INDEX, {"old": 1_700_000_000.0})
    (entry,) = listed(client)
    assert entry.presence is not None and entry.presence.done == 10
    assert (entry.presence.load, entry.presence.settings, entry.presence.klasses) == (0.0, (), ())
