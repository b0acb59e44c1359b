"""Log in to the running example's admin like a person would and open its pages."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
import urllib.request

#: Pages opened after logging in, with a text each must contain.
PAGES = [
    ("/admin/", "Site administration"),
    ("/admin/newsletter/subscriber/", "alice@example.com"),
    ("/admin/newsletter/issue/", "Issue #1"),
    ("/admin/newsletter/export/", "Export #"),
    # django_qless's own pages.
    ("/admin/django_qless/overview/", "Qless overview"),
    ("/admin/django_qless/queue/default/q/archive/", "Unpause"),
    ("/admin/django_qless/failure/", "imports-FeedFormatError"),
    ("/admin/django_qless/failure/default/g/imports-FeedFormatError/",
     "newsletter.qless_jobs.import_partner_feed"),
    ("/admin/django_qless/job/default/tracked/", "newsletter.qless_jobs.finish_issue"),
    # Every issue's jobs: a served demo run again keeps its database (issue 1's jobs are
    # in the previous run's Redis) and seeds new issues.
    ("/admin/django_qless/job/default/tagged/?tag=issue", "newsletter.qless_jobs.render_issue"),
    ("/admin/django_qless/recurringjob/", "newsletter.qless_jobs.purge_old_exports"),
]


def check_admin(base: str, username: str, password: str) -> list[str]:
    """Log in and fetch every page in `PAGES`; returns one line per page, raises on failure."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    login = f"{base}/admin/login/?next=/admin/"
    page = _get(opener, login)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if token is None:
        raise RuntimeError("no CSRF token on the admin login page")
    form = urllib.parse.urlencode({
        "csrfmiddlewaretoken": token.group(1), "username": username, "password": password,
        "next": "/admin/",
    }).encode()
    request = urllib.request.Request(  # noqa: S310 - our own local server
        login, data=form, headers={"Referer": login}
    )
    with opener.open(request, timeout=10) as response:  # noqa: S310 - our own local server
        if response.url.split("?")[0].endswith("/login/"):
            raise RuntimeError(f"logging in as {username!r} failed")
    lines = [f"logged in as {username}"]
    for path, expected in PAGES:
        if expected not in _get(opener, base + path):
            raise RuntimeError(f"{path} does not show {expected!r}")
        lines.append(f"{path} shows {expected!r}")
    return lines


def _get(opener: urllib.request.OpenerDirector, url: str) -> str:
    """GET a page (raises HTTPError for 4xx/5xx) and return its text."""
    with opener.open(url, timeout=10) as response:  # noqa: S310 - our own local server
        return str(response.read().decode("utf-8"))
