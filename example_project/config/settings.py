"""Settings of the django_qless example project, read from the environment and `.env`."""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
#: Where `run.py` keeps the embedded redis-server (its `url` file names the running one).
REDIS_DIR = BASE_DIR / ".redis"

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    # Values already in the environment win over the file.
    environ.Env.read_env(BASE_DIR / ".env")


def embedded_redis_url() -> str:
    """The URL of the embedded redis-server started by `run.py`, else a local default."""
    try:
        return (REDIS_DIR / "url").read_text(encoding="utf-8").strip()
    except OSError:
        return "redis://localhost:6379/0"


SECRET_KEY = env("DJANGO_SECRET_KEY", default="example-project-only-not-secret")
DEBUG = env.bool("DJANGO_DEBUG", default=True)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_qless",
    "newsletter",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

QLESS = {
    "URL": env("QLESS_URL", default=embedded_redis_url()),
    "IMMEDIATE": env.bool("QLESS_IMMEDIATE", default=False),
    "WORKER": {
        # Tried in this order for every job; `archive` is paused by the demo seed.
        "QUEUES": ["emails", "issues", "imports", "exports", "maintenance", "archive"],
        "PROCESSES": env.int("QLESS_WORKER_PROCESSES", default=2),
        "POLL_INTERVAL": 2,
        "SHUTDOWN_TIMEOUT": 10,
    },
}

# Django's Tasks framework on qless: `newsletter.tasks.weekly_digest` is a Django Task that
# the same `qless_worker` runs beside the `@qless_job` functions.
TASKS = {
    "default": {
        "BACKEND": "django_qless.tasks.QlessBackend",
        "QUEUES": ["issues", "maintenance"],
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "short": {"format": "%(asctime)s %(levelname)-7s %(name)s: %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "short"},
    },
    "loggers": {
        "django_qless": {"handlers": ["console"], "level": env("QLESS_LOG_LEVEL", default="INFO")},
        "newsletter": {"handlers": ["console"], "level": "INFO"},
    },
}
