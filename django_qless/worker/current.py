"""The jid a worker process is running, where its supervisor can read it after a crash.

`--processes N`: the supervisor maps a small shared page per child before forking it
(`Board`); the child's runners write the running jids there at the start of each job and
clear them at the end (`running`). When the child dies abnormally the supervisor reads
the page and logs the jid with the death. Outside a supervisor `running` does nothing.
"""

from __future__ import annotations

import mmap
import threading

#: Bytes of the shared page: a length byte, then the jid (qless jids are far shorter).
SIZE = 256


class Board:
    """One shared page holding one jid (or none), written by the child, read by its parent."""

    def __init__(self) -> None:
        self.page = mmap.mmap(-1, SIZE)

    def write(self, jid: str | None) -> None:
        """Record the running jid (None: no job)."""
        data = (jid or "").encode()[: SIZE - 1]
        # The length byte goes last: a reader never sees a length longer than the jid written.
        self.page[0] = 0
        self.page[1:1 + len(data)] = data
        self.page[0] = len(data)

    def read(self) -> str | None:
        """The recorded jid, or None."""
        length = self.page[0]
        return self.page[1:1 + length].decode(errors="replace") if length else None

    def close(self) -> None:
        """Unmap the page."""
        self.page.close()


_board: Board | None = None
#: The jid each thread (or loop job) of this process is running (several with
#: `--concurrency N`).
_running: dict[int, str] = {}
_lock = threading.Lock()


def attach(board: Board | None) -> None:
    """Publish this process's running jids on `board` from now on (called in the child)."""
    global _board  # noqa: PLW0603 - one board per process, set once after the fork
    _board = board


def running(jid: str | None, key: object = None) -> None:
    """The calling thread (or the job `key` stands for, on the event loop) started (`jid`)
    or finished (None) a job; the board shows every running jid, comma-separated (as many
    as fit)."""
    if _board is None:
        return
    runner = threading.get_ident() if key is None else id(key)
    with _lock:
        if jid is None:
            _running.pop(runner, None)
        else:
            _running[runner] = jid
        _board.write(", ".join(_running.values()) or None)
