"""`mark_deploy`: record a deploy marker on a configured connection (drawn on every chart)."""

from __future__ import annotations

from .conf import DEFAULT_ALIAS
from .connection import get_client
from .core.deploys import Deploy
from .core.deploys import mark_deploy as record


def mark_deploy(label: str, using: str = DEFAULT_ALIAS) -> Deploy:
    """Record a deploy labelled `label` now, on connection `using`.

    Raises `InvalidArgumentError` (nothing written) for an empty, multi-line or over-long
    label, and `QlessConfigurationError` for a connection not configured.
    """
    client = get_client(using)
    return record(client.redis, label, client.now())
