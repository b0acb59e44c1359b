"""Bulk puts are packed with hiredis when it is there: the bytes `batch.pack` writes."""

from __future__ import annotations

import random

import pytest
import redis

from django_qless.core import put_many
from django_qless.core.batch import pack
from django_qless.core.commands import Command
from django_qless.core.script import QlessScript


@pytest.mark.skipif(put_many._pack_command is None, reason="hiredis is not installed")
def test_hiredis_packs_the_bytes_batch_pack_writes() -> None:
    rng = random.Random(7)
    script = QlessScript(redis.Redis())  # no connection is made: packing is local
    for _ in range(500):
        number = rng.random() * 10 ** rng.randint(-8, 14)
        args = (11, "w", "q", "jid", "k", '{"é":[1,2.5]}', number, "priority",
                rng.choice([0, -3, 2.5, 1e-7, 123456789012]), "tags", '["ü"]')
        now = 1.7e9 + rng.random()
        call = Command("put.many", args)
        assert put_many._pack(script, now, call) == pack(script, now, [call])


def test_groups_cover_every_command_in_order() -> None:
    def put(jid: str, *options: str) -> Command:
        return Command("put", ("w", "q", jid, "k", "{}", 0, *options))

    commands = [put("a"), put("b", "depends", "[]"), put("c", "depends", '["a"]'), put("d"),
                Command("track", ("track", "d")), put("e")]
    calls, sizes = put_many.group(commands)
    assert [call.name for call in calls] == ["put.many", "put", "put", "track", "put"]
    assert sizes == [2, 1, 1, 1, 1]
    assert calls[0].args == (6, "w", "q", "a", "k", "{}", 0,
                             8, "w", "q", "b", "k", "{}", 0, "depends", "[]")
