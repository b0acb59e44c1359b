"""The sentry-sdk releases the integration is written for: 2.15 and later 2.x."""

from __future__ import annotations

import sentry_sdk

#: The first major release whose tracing API the integration does not use (sentry-sdk 3
#: replaced transactions with span streaming: no `sentry_sdk.tracing`, no `SPANSTATUS`).
UNSUPPORTED_MAJOR = 3


def check_version(version: str | None = None) -> None:
    """Refuse, with the reason, a sentry-sdk the integration cannot drive."""
    found = sentry_sdk.VERSION if version is None else version
    major = found.split(".", 1)[0]
    if major.isdigit() and int(major) >= UNSUPPORTED_MAJOR:
        raise ImportError(
            f"django_qless.integrations.sentry supports sentry-sdk 2.x (2.15 or later); "
            f"sentry-sdk {found} is installed. Install 'django-qless[sentry]' (which "
            f"requires sentry-sdk<3) or pip install 'sentry-sdk>=2.15,<3'.")
