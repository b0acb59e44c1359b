"""The "Select all N matching" link above a job list: the list's own selection, or the search's."""

from __future__ import annotations

from typing import Any

from django import template

from ..admin import bulk_all, search_query
from ..core import InvalidArgumentError

register = template.Library()


@register.simple_tag(takes_context=True)
def qless_select_all(context: template.Context) -> dict[str, Any] | None:
    """What the link needs (see `bulk_all.offer`), or None where there is nothing to select.

    A list's view names its selection (`select_all`); the search page's is its own query
    (its results are shown with a `walk`), whose size is known only once walked.
    """
    offer = context.get("select_all")
    if offer is not None or context.get("walk") is None or "request" not in context:
        return offer
    try:
        job_filter = search_query.parse(context["request"].GET)
    except InvalidArgumentError:
        return None
    return None if job_filter.is_empty() else bulk_all.offer(job_filter.query(), None)
