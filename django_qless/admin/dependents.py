"""The jobs waiting on a set of jobs, directly or through others (for cancelling them)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Client

#: Most dependents gathered for one confirmation page (a larger tree is cut off there).
LIMIT = 500
#: Jobs read per round trip while walking the tree.
BATCH = 100


def waiting_on(client: Client, jids: Sequence[str], limit: int = LIMIT) -> list[str]:
    """Jids of the jobs that depend on `jids`, transitively, not already among them."""
    seen = set(jids)
    found: list[str] = []
    frontier = list(jids)
    while frontier and len(found) < limit:
        batch, frontier = frontier[:BATCH], frontier[BATCH:]
        for job in client.get_jobs(batch):
            for dependent in job.dependents:
                if dependent not in seen and len(found) < limit:
                    seen.add(dependent)
                    found.append(dependent)
                    frontier.append(dependent)
    return found
