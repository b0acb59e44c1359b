"""django_qless: qless, the Redis + Lua job queue, as a Django app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Django-free (settings modules use it), so imported eagerly.
from .schedules import every

__version__ = "0.1.0"

__all__ = ["__version__", "every", "get_client", "mark_deploy", "qless_job"]

if TYPE_CHECKING:
    from .connection import get_client
    from .decorators import qless_job
    from .deploy_marks import mark_deploy


def __getattr__(name: str) -> Any:
    """Import `qless_job`, `get_client` and `mark_deploy` on first use.

    Importing them here eagerly would pull Django into every `import django_qless.core`,
    and the core must stay importable without Django.
    """
    if name == "qless_job":
        from .decorators import qless_job  # noqa: PLC0415

        return qless_job
    if name == "get_client":
        from .connection import get_client  # noqa: PLC0415

        return get_client
    if name == "mark_deploy":
        from .deploy_marks import mark_deploy  # noqa: PLC0415

        return mark_deploy
    raise AttributeError(f"module 'django_qless' has no attribute {name!r}")
