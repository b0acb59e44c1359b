"""The requests `live.js` makes: the page's own URL again, marked by a header.

The same view answers them, behind the same permission checks (and, as every admin page,
never cached); only the handling of the answer differs: it leaves the user's pending
messages alone, since the script shows only the live region and a message rendered outside
it would be lost.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.messages.storage.base import BaseStorage
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers

#: The header `live.js` sends.
HEADER = "X-Qless-Live"
#: The script, loaded by every page (it does nothing on a page without a live region).
MEDIA = forms.Media(js=["django_qless/live.js"])


def is_live(request: HttpRequest) -> bool:
    """Whether the request is a live page's refresh."""
    return request.headers.get(HEADER) == "1"


def prepare(request: HttpRequest, response: TemplateResponse) -> None:
    """Mark a page response for live refreshes (messages kept for the next page)."""
    patch_vary_headers(response, [HEADER])
    if is_live(request):
        response.add_post_render_callback(lambda _: keep_messages(request))


def keep_messages(request: HttpRequest) -> None:
    """Leave the messages rendered in a live refresh stored, as if never shown."""
    storage = messages.get_messages(request)
    if isinstance(storage, BaseStorage):
        storage.used = False
