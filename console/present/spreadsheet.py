"""CSV that a spreadsheet opens without running anything: a text cell that begins with =, +, -, @, a tab or a
carriage return is a formula (or turns into one) in Excel, LibreOffice and Google Sheets, so it gets a leading
single quote, as OWASP advises for CSV injection. Numbers, and text that is only a number, stay as they are."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows as text: a string that would start a formula is prefixed
    with ``'``; anything else is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class _Writer:
    """csv.writer's writerow/writerows, every cell passed through :func:`cell`."""

    def __init__(self, out: Any, **options: Any) -> None:
        self._writer = csv.writer(out, **options)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out: Any, **options: Any) -> _Writer:
    """Like csv.writer(out, **options), with formula-like text cells escaped."""
    return _Writer(out, **options)


class DictWriter(csv.DictWriter):  # type: ignore[type-arg]
    """csv.DictWriter with formula-like text cells escaped."""

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({k: cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for row in rowdicts:
            self.writerow(row)
