"""The one pagination helper: pages of a list read through offset/count queries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.http import HttpRequest

T = TypeVar("T")
U = TypeVar("U")

PAGE_SIZE = 25
#: Page numbers beyond this are clamped (the offset stays a sane integer for Redis).
MAX_PAGE = 10_000_000


@dataclass(frozen=True)
class Pagination(Generic[T]):
    """One page of a list; `total` is None when the query cannot count the list."""

    items: Sequence[T]
    number: int
    size: int
    total: int | None
    has_next: bool
    query: str
    previous_query: str
    next_query: str

    @property
    def has_previous(self) -> bool:
        """Whether there is a page before this one."""
        return self.number > 1

    @property
    def offset(self) -> int:
        """Position of the first item of the page in the whole list."""
        return (self.number - 1) * self.size

    @property
    def num_pages(self) -> int | None:
        """How many pages the list has, when its size is known."""
        return None if self.total is None else max(1, -(-self.total // self.size))

    def map(self, convert: Callable[[Sequence[T]], Sequence[U]]) -> Pagination[U]:
        """The same page with its items converted (e.g. jids to jobs)."""
        return Pagination(
            items=convert(self.items), number=self.number, size=self.size, total=self.total,
            has_next=self.has_next, query=self.query, previous_query=self.previous_query,
            next_query=self.next_query,
        )


def page_number(request: HttpRequest) -> int:
    """The `page` query parameter: a number from 1 to `MAX_PAGE` (anything else is 1)."""
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        return 1
    return min(max(number, 1), MAX_PAGE)


def paginate(
    request: HttpRequest,
    fetch: Callable[[int, int], Sequence[T]],
    total: int | None = None,
    size: int = PAGE_SIZE,
) -> Pagination[T]:
    """Fetch the requested page with `fetch(offset, count)` (one item more if no `total`)."""
    number = page_number(request)
    offset = (number - 1) * size
    if total is None:
        items = list(fetch(offset, size + 1))
        has_next = len(items) > size
        items = items[:size]
    else:
        items = list(fetch(offset, size)) if offset < total else []
        has_next = offset + size < total
    return Pagination(
        items=items, number=number, size=size, total=total, has_next=has_next,
        query=_query(request, number), previous_query=_query(request, number - 1),
        next_query=_query(request, number + 1),
    )


def paginate_sequence(
    request: HttpRequest, items: Sequence[T], size: int = PAGE_SIZE
) -> Pagination[T]:
    """Paginate a list that is already in memory."""
    return paginate(request, lambda offset, count: items[offset : offset + count], len(items), size)


def _query(request: HttpRequest, number: int) -> str:
    """The current query string with `page` set to `number`."""
    query = request.GET.copy()
    query["page"] = str(max(number, 1))
    return query.urlencode()
