"""Redis persistence: whether an acknowledged put survives Redis dying.

Read with `CONFIG GET appendonly` / `appendfsync`; managed services often rename or forbid
`CONFIG`, so `INFO persistence` (`aof_enabled`) is the fallback, which cannot tell the
fsync policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

#: What each fsync policy risks, for the messages.
EVERYSEC_NOTE = ("appendfsync everysec: a killed Redis process loses nothing, but a power "
                 "loss or kernel crash can lose up to about 1 s of acknowledged puts")
ADVICE = "set appendonly yes and appendfsync always (or everysec)"


@dataclass(frozen=True)
class Persistence:
    """Redis' append-only-file settings, as far as they could be read."""

    aof: bool
    #: `always`, `everysec` or `no`; None when `CONFIG` was refused.
    appendfsync: str | None

    @property
    def problem(self) -> str | None:
        """How acknowledged puts can be lost when Redis dies, or None."""
        if not self.aof:
            return ("Redis persistence: appendonly is no (RDB snapshots at most): every put "
                    "acknowledged since the last snapshot is lost when Redis dies; " + ADVICE)
        if self.appendfsync == "no":
            return ("Redis persistence: appendfsync is no: the kernel decides when the AOF "
                    "reaches the disk, so a crash can lose acknowledged puts; " + ADVICE)
        return None

    @property
    def note(self) -> str | None:
        """A remark about a setting that is accepted but not lossless, or None."""
        if not self.aof or self.appendfsync == "no":
            return None
        if self.appendfsync is None:
            return ("Redis persistence: appendonly yes; appendfsync unknown (CONFIG is "
                    "refused; INFO persistence does not tell the fsync policy)")
        if self.appendfsync == "everysec":
            return f"Redis persistence: {EVERYSEC_NOTE}"
        return None


def read_persistence(connection: redis.Redis) -> Persistence:
    """The AOF settings; raises `redis.ResponseError` when both CONFIG and INFO are refused."""
    try:
        found = connection.config_get("append*")
    except redis.ResponseError:
        info = connection.info("persistence")
        return Persistence(aof=_flag(info.get("aof_enabled")), appendfsync=None)
    settings = {_text(key): _text(value) for key, value in found.items()}
    return Persistence(aof=settings.get("appendonly") == "yes",
                       appendfsync=settings.get("appendfsync"))


def _flag(value: object) -> bool:
    """An INFO field that is 1 or 0."""
    return str(value) == "1"


def _text(value: object) -> str:
    """A reply item as text, whether the connection decodes replies or not."""
    return value.decode() if isinstance(value, bytes) else str(value)
