"""A list page as CSV (console/present/listing.py): every filtered row, sorted as the page is, not paged, one
column per listing column, formula-like text made inert; lists that do not say they can be exported have no
CSV link."""

from __future__ import annotations

import csv
import io
from typing import Any

from console.present.listing import csv_download, make_listing

ROWS = [("orders", 3, 120), ("=cmd|' /C calc'!A0", 1, None), ("clicks", 6, 5000), ("audit", 1, 7)]
COLUMNS: dict[str, Any] = {"name": lambda r: r[0], "partitions": lambda r: r[1], "messages": lambda r: r[2]}
LABELS = {"name": "Topic", "partitions": "Partitions", "messages": "Messages"}


def test_every_filtered_row_sorted_not_paged() -> None:
    params = {"sort": "messages", "dir": "desc", "per_page": "2", "page": "2"}
    listing = make_listing(params, ROWS, COLUMNS, lambda r: r[0], "name", LABELS, exportable=True)
    assert len(listing.rows) == 2  # the page
    rows = list(csv.reader(io.StringIO(csv_download(listing, "t.csv").content.decode())))
    assert rows == [
        ["name", "partitions", "messages"],
        ["clicks", "6", "5000"],
        ["orders", "3", "120"],
        ["audit", "1", "7"],
        ["'=cmd|' /C calc'!A0", "1", ""],
    ]
    assert listing.csv_link == "?sort=messages&dir=desc&format=csv"
    filtered = make_listing({"q": "or"}, ROWS, COLUMNS, lambda r: r[0], "name", LABELS, exportable=True)
    assert [r[0] for r in csv.reader(io.StringIO(csv_download(filtered, "t.csv").content.decode()))][1:] == ["orders"]


def test_no_link_unless_exportable() -> None:
    listing = make_listing({}, ROWS, COLUMNS, lambda r: r[0], "name", LABELS)
    assert listing.csv_link is None
