"""URL routes of the admin pages: each a page (GET) or an action (POST) with its permission."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpResponse

from . import permissions


@dataclass(frozen=True)
class Route:
    """One URL of the app, relative to its model's admin URL."""

    path: str
    view: Callable[..., HttpResponse]
    name: str
    perm: str = permissions.VIEW
    action: bool = False


def page(route: str, view: Callable[..., HttpResponse], name: str) -> Route:
    """A page: GET/HEAD, view permission."""
    return Route(route, view, name)


def action(route: str, view: Callable[..., HttpResponse], name: str, perm: str) -> Route:
    """An action: POST only, with its own permission (plus the view permission)."""
    return Route(route, view, name, perm, action=True)


#: Prefix of every route: the connection alias.
A = "<str:alias>/"
