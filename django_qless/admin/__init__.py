"""The qless pages of the Django admin (found by the admin's autodiscovery)."""

from . import admin as registration  # noqa: F401 - registers the ModelAdmins
