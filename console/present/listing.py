"""Filter, sort and paginate a list of rows for a table page; the same for every list in the console."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from django.http import HttpResponse

from broker.errors import InvalidInput
from console.params import choice_param, int_param
from console.present import spreadsheet

T = TypeVar("T")
PER_PAGE_CHOICES = (25, 50, 100, 200)


@dataclass(frozen=True)
class Listing(Generic[T]):
    rows: list[T]
    total: int  # rows after filtering
    page: int
    pages: int
    per_page: int
    sort: str
    direction: str
    query: str
    params: dict[str, str]  # the current query string, to build links that change one thing
    labels: dict[str, str]  # column key -> header text, in table order
    # Every row that passed the filter, sorted, not paged, and the columns' values: what its CSV holds.
    everything: list[T] = field(default_factory=list, repr=False)
    columns: dict[str, Callable[[T], Any]] = field(default_factory=dict, repr=False)

    @property
    def csv_link(self) -> str | None:
        """This list (its filter and sort, every page) as CSV; None for a list that has no columns to give."""
        return self.link(format="csv", page="", per_page="") if self.columns else None

    @property
    def headers(self) -> list[dict[str, Any]]:
        """Each column's header: label, the link that sorts by it, and whether it is the current sort."""
        return [
            {
                "key": key,
                "label": label,
                "url": self.sort_link(key),
                "active": key == self.sort,
                "direction": self.direction if key == self.sort else None,
            }
            for key, label in self.labels.items()
        ]

    @property
    def pager(self) -> dict[str, str | None]:
        return {
            "first": self.link(page=1) if self.page > 1 else None,
            "prev": self.link(page=self.page - 1) if self.page > 1 else None,
            "next": self.link(page=self.page + 1) if self.page < self.pages else None,
            "last": self.link(page=self.pages) if self.page < self.pages else None,
        }

    def link(self, **changes: Any) -> str:
        merged = {**self.params, **{k: str(v) for k, v in changes.items() if v is not None}}
        return "?" + urlencode({k: v for k, v in merged.items() if v != ""})

    def sort_link(self, column: str) -> str:
        direction = "desc" if self.sort == column and self.direction == "asc" else "asc"
        return self.link(sort=column, dir=direction, page=1)

    @property
    def first_row(self) -> int:
        return (self.page - 1) * self.per_page + 1 if self.total else 0

    @property
    def last_row(self) -> int:
        return min(self.total, self.page * self.per_page)


def make_listing(
    params: Mapping[str, str],
    rows: Sequence[T],
    columns: dict[str, Callable[[T], Any]],
    search: Callable[[T], str],
    default_sort: str,
    labels: dict[str, str],
    extra: dict[str, str] | None = None,
    exportable: bool = False,
) -> Listing[T]:
    """Rows whose ``search`` text contains ?q (case-insensitive), sorted by ?sort/?dir, page ?page of ?per_page.

    None sorts last whatever the direction. Raises InvalidInput for an unknown column or a bad number.
    ``exportable``: the columns' values are what a CSV of the list holds (the pager then links to it).
    """
    query = params.get("q", "").strip()
    sort = choice_param(params, "sort", tuple(columns), default_sort)
    direction = choice_param(params, "dir", ("asc", "desc"), "asc")
    per_page = int_param(params, "per_page", 50, minimum=1, maximum=max(PER_PAGE_CHOICES)) or 50
    needle = query.lower()
    kept = [r for r in rows if needle in search(r).lower()] if needle else list(rows)
    key = columns[sort]
    present = [r for r in kept if key(r) is not None]
    absent = [r for r in kept if key(r) is None]
    present.sort(key=key, reverse=direction == "desc")
    ordered = present + absent
    pages = max(1, math.ceil(len(ordered) / per_page))
    page = int_param(params, "page", 1, minimum=1) or 1
    if page > pages:
        raise InvalidInput(f"page {page} is past the last page ({pages}).")
    params = {"q": query, "sort": sort, "dir": direction, "per_page": str(per_page), "page": str(page), **(extra or {})}
    return Listing(
        rows=ordered[(page - 1) * per_page : page * per_page],
        total=len(ordered),
        page=page,
        pages=pages,
        per_page=per_page,
        sort=sort,
        direction=direction,
        query=query,
        params=params,
        labels=labels,
        everything=ordered,
        columns=dict(columns) if exportable else {},
    )


def wants_csv(params: Mapping[str, str]) -> bool:
    """``?format=csv``: the list as a CSV file rather than a page."""
    return params.get("format") == "csv"


def csv_download(listing: Listing[Any], filename: str) -> HttpResponse:
    """``listing`` (every filtered row, sorted) as a CSV attachment named ``filename``."""
    return csv_file(listing.columns, listing.everything, filename)


def csv_file(columns: dict[str, Callable[[T], Any]], rows: Iterable[T], filename: str) -> HttpResponse:
    """``rows`` (an iterator over a query of any size is read once) as a CSV attachment, a column per
    ``columns`` (its key the header), safe to open in a spreadsheet."""
    out = io.StringIO()
    writer = spreadsheet.writer(out)
    writer.writerow(list(columns))
    writer.writerows([get(row) for get in columns.values()] for row in rows)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
