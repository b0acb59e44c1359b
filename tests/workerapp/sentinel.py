"""Importing this module leaves a trace: the worker must never import a klass found in Redis."""

import os

IMPORTED = True
_marker = os.environ.get("QLESS_SENTINEL_FILE")
if _marker:
    with open(_marker, "w") as handle:
        handle.write("imported\n")


def boom() -> None:
    """Would run if the worker imported klasses by name."""
