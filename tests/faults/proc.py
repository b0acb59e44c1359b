"""What a process holds open, read from /proc (Linux): files and TCP connections."""

from __future__ import annotations

import os
from pathlib import Path

#: The state of an established connection in /proc/<pid>/net/tcp.
ESTABLISHED = "01"


def _links(pid: int) -> list[str]:
    """Where each of the process's descriptors points (those closed meanwhile left out)."""
    links = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            links.append(os.readlink(fd))
        except OSError:
            continue
    return links


def open_files(pid: int, path: Path) -> int:
    """How many of the process's descriptors are open on `path`."""
    return _links(pid).count(str(path.resolve()))


def local_ports(pid: int, port: int) -> set[int]:
    """The local ports of the process's established TCP connections to `port`."""
    inodes = {link[len("socket:["):-1] for link in _links(pid) if link.startswith("socket:[")}
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if (inode in inodes and state == ESTABLISHED
                    and int(remote.rsplit(":", 1)[1], 16) == port):
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports
