"""django_qless: qless, the Redis + Lua job queue, as a Django app."""

__version__ = "0.1.0"

__all__ = ["__version__"]
