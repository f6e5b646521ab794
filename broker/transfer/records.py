"""Records as lines of a file, byte for byte: the JSON Lines the console exports and imports, CSV with a column
map, and one value per line.

A JSON line holds a record's bytes so that importing it writes the same bytes: ``key``, ``value`` and each
header's ``value`` are text when the bytes are UTF-8 (``"key_encoding": "text"``), base64 otherwise
(``"base64"``); a null is ``null``. ``partition``, ``offset``, ``timestamp`` and ``timestamp_type`` say where
and when the record was; on import, ``partition`` and ``timestamp`` are used only when asked (keep_partition,
keep_timestamp), ``offset`` never (Kafka gives offsets).

Parsing reads a whole file before anything is written: every bad line is reported with its number, and the
caller writes nothing unless it asked to skip bad lines.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from broker.errors import InvalidInput

__all__ = [
    "FORMATS",
    "BadLine",
    "Parsed",
    "Record",
    "csv_header",
    "csv_row",
    "decode_bytes",
    "encode_bytes",
    "parse",
    "to_json_line",
]

FORMATS = ("jsonl", "csv", "lines")
MAX_ERRORS = 100  # bad lines reported at the most (the count goes on)


@dataclass(frozen=True)
class Record:
    """One record to write, or one that was read (then with partition, offset and timestamp)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None
    timestamp_type: str | None = None


def encode_bytes(raw: bytes | None) -> tuple[str | None, str | None]:
    """(text, encoding) for ``raw``: ("...", "text") for UTF-8, base64 otherwise, (None, None) for a null."""
    if raw is None:
        return None, None
    try:
        return raw.decode("utf-8"), "text"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def decode_bytes(text: Any, encoding: Any, what: str) -> bytes | None:
    """The bytes ``text`` stands for in ``encoding`` (text, base64, json: the JSON of a value written as is);
    raises ValueError naming ``what``."""
    if text is None:
        return None
    if encoding in (None, "", "text"):
        if not isinstance(text, str):
            if encoding is None:  # a value written as JSON (a number, an object) is its JSON text
                return json.dumps(text, separators=(",", ":"), ensure_ascii=False).encode()
            raise ValueError(f"{what} is text by its encoding but is {type(text).__name__}")
        return text.encode("utf-8")
    if encoding == "base64":
        if not isinstance(text, str):
            raise ValueError(f"{what} is base64 by its encoding but is {type(text).__name__}")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{what} is not valid base64") from None
    if encoding == "json":
        return json.dumps(text, separators=(",", ":"), ensure_ascii=False).encode()
    raise ValueError(f"{what}_encoding must be text, base64 or json, not {str(encoding)[:20]!r}")


def to_json_line(record: Record, topic: str) -> str:
    """One line of the export (no newline): the record's bytes with their encodings, where and when it was."""
    key, key_enc = encode_bytes(record.key)
    value, value_enc = encode_bytes(record.value)
    headers = []
    for name, raw in record.headers:
        text, enc = encode_bytes(raw)
        headers.append({"name": name, "value": text, "encoding": enc})
    document = {
        "topic": topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
        "key": key,
        "key_encoding": key_enc,
        "value": value,
        "value_encoding": value_enc,
        "headers": headers,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


CSV_COLUMNS = ("partition", "offset", "timestamp", "key", "value", "headers")


def csv_header() -> list[str]:
    return list(CSV_COLUMNS)


def csv_row(record: Record) -> list[str]:
    """A CSV row of the export: key and value as text (``base64:...`` when not UTF-8 or when the text itself
    starts so; an empty cell is a null, so an empty value comes back null), the headers as a JSON list of
    [name, value] pairs, their values written the same way."""
    headers = [[name, _csv_text(raw)] for name, raw in record.headers]
    return [
        "" if record.partition is None else str(record.partition),
        "" if record.offset is None else str(record.offset),
        "" if record.timestamp is None else str(record.timestamp),
        _csv_text(record.key),
        _csv_text(record.value),
        json.dumps(headers, ensure_ascii=False) if headers else "",
    ]


def _csv_text(raw: bytes | None) -> str:
    text, encoding = encode_bytes(raw)
    if text is None:
        return ""
    if encoding == "text" and not text.startswith("base64:"):
        return text
    return "base64:" + base64.b64encode(raw or b"").decode("ascii")


@dataclass(frozen=True)
class BadLine:
    line: int  # 1-based, as an editor numbers them
    reason: str


@dataclass
class Parsed:
    """What a file holds: the records of its good lines, in order, and its bad lines."""

    records: list[Record] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    bad_count: int = 0

    def refuse(self, line: int, reason: str) -> None:
        self.bad_count += 1
        if len(self.bad) < MAX_ERRORS:
            self.bad.append(BadLine(line, reason))


def parse(data: bytes, fmt: str, columns: dict[str, str] | None = None, max_records: int = 1_000_000) -> Parsed:
    """Every record of a file (``fmt`` one of FORMATS; ``columns`` for CSV: which column is the key, the value,
    the partition, the timestamp, and ``header:NAME`` columns). Raises InvalidInput for a file it cannot read at
    all (not UTF-8, an unknown format, too many records); bad lines are in the result, with their numbers."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}, not {fmt[:20]!r}.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"The file is not UTF-8 text (byte {exc.start}); JSON Lines hold other bytes as base64."
        ) from None
    parsed = Parsed()
    lines = _csv_records(text, columns or {}, parsed) if fmt == "csv" else _lines(text, fmt, parsed)
    for record in lines:
        parsed.records.append(record)
        if len(parsed.records) > max_records:
            raise InvalidInput(f"The file holds more than {max_records:,} records; split it.")
    return parsed


def _lines(text: str, fmt: str, parsed: Parsed) -> Iterator[Record]:
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if fmt == "lines":
            if line:
                yield Record(key=None, value=line.encode("utf-8"))
            continue
        if not line.strip():
            continue
        try:
            yield _from_json(json.loads(line))
        except json.JSONDecodeError as exc:
            parsed.refuse(number, f"not JSON ({exc.msg} at column {exc.colno})")
        except ValueError as exc:
            parsed.refuse(number, str(exc))


def _from_json(document: Any) -> Record:
    if not isinstance(document, dict):
        raise ValueError("a line must be a JSON object with at least a value")
    key = decode_bytes(document.get("key"), document.get("key_encoding"), "key")
    value = decode_bytes(document.get("value"), document.get("value_encoding"), "value")
    headers = _headers(document.get("headers") or [])
    partition = _whole(document.get("partition"), "partition", 0, 2**31 - 1)
    timestamp = _whole(document.get("timestamp"), "timestamp", 0, 2**63 - 1)
    return Record(key, value, headers, partition, None, timestamp)


def _headers(given: Any) -> tuple[tuple[str, bytes | None], ...]:
    if isinstance(given, dict):  # {"name": "value"} for hand-written files
        given = [{"name": k, "value": v} for k, v in given.items()]
    if not isinstance(given, list):
        raise ValueError("headers must be a list of {name, value, encoding}")
    found = []
    for i, h in enumerate(given):
        if isinstance(h, list | tuple) and len(h) == 2:
            h = {"name": h[0], "value": h[1]}
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise ValueError(f"header {i + 1} needs a name")
        found.append((h["name"], decode_bytes(h.get("value"), h.get("encoding"), f"header {h['name']!r}")))
    return tuple(found)


def _whole(value: Any, what: str, low: int, high: int) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{what} must be a whole number")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, not {str(value)[:20]!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{what} {number} is out of range")
    return number


def _csv_records(text: str, columns: dict[str, str], parsed: Parsed) -> Iterable[Record]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    names = reader.fieldnames or []
    wanted = {role: columns.get(role, role) for role in ("key", "value", "partition", "timestamp")}
    if wanted["value"] not in names:
        raise InvalidInput(
            f"The CSV file has no column {wanted['value']!r} for the value; its columns: {', '.join(names)[:200]}."
        )
    header_columns = {
        role.removeprefix("header:"): column for role, column in columns.items() if role.startswith("header:")
    }
    for role, column in [*wanted.items(), *header_columns.items()]:
        if role in ("key", "value", "partition", "timestamp") and column not in names and role in columns:
            raise InvalidInput(f"The CSV file has no column {column!r} (asked for the {role}).")
        if role not in ("key", "value", "partition", "timestamp") and column not in names:
            raise InvalidInput(f"The CSV file has no column {column!r} (asked for header {role!r}).")
    listed = "headers" in names and not header_columns  # the export's own column: a JSON list of [name, value]
    for row in reader:
        number = reader.line_num
        try:
            headers = tuple((name, _cell(row.get(column))) for name, column in header_columns.items())
            if listed and row.get("headers"):
                pairs = json.loads(row["headers"])
                if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                    raise ValueError("headers must be a JSON list of [name, value] pairs")
                headers = tuple((str(name), _cell(value)) for name, value in pairs)
            yield Record(
                key=_cell(row.get(wanted["key"])) if wanted["key"] in names else None,
                value=_cell(row.get(wanted["value"])),
                headers=headers,
                partition=_whole(row.get(wanted["partition"]), "partition", 0, 2**31 - 1)
                if wanted["partition"] in names
                else None,
                timestamp=_whole(row.get(wanted["timestamp"]), "timestamp", 0, 2**63 - 1)
                if wanted["timestamp"] in names
                else None,
            )
        except ValueError as exc:
            parsed.refuse(number, str(exc))


def _cell(text: str | None) -> bytes | None:
    """A CSV cell's bytes: empty is null, ``base64:...`` is the bytes it encodes, else the text."""
    if text is None or text == "":
        return None
    if text.startswith("base64:"):
        return decode_bytes(text.removeprefix("base64:"), "base64", "a base64: cell")
    return text.encode("utf-8")
