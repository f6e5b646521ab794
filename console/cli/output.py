"""What ``kazami`` prints: aligned tables (numbers right-aligned, with separators; sizes in KiB/MiB), records
on one line each or whole, and the same as JSON for scripts (a record's key and value as the JSON API gives
them: UTF-8 text, or base64, with the kind auto-detection found)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from broker.decode import Decoded, RecordDecoder, decode, wire_value
from broker.messages.log import Message
from console.present import units

LINE_LIMIT = 160  # characters of a key or value on a record's one line
WHOLE_LIMIT = 1_000_000  # characters of a key or value shown whole (get)
EMPTY = "-"


def number(value: int | None) -> str:
    return EMPTY if value is None else f"{value:,}"


def size(value: int | None) -> str:
    """Bytes as the pages write them (console/present/units.py): 512 B, 1.50 KiB, 100 MiB."""
    return EMPTY if value is None else units.size(value)


def when(ms: int | None) -> str:
    """An epoch time in ms as UTC, to the millisecond."""
    if ms is None or ms < 0:
        return EMPTY
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def table(out: TextIO, headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[bool] = ()) -> None:
    """``rows`` under ``headers``, columns aligned; ``right[i]``: column i is right-aligned (numbers)."""
    cells = [[str(h) for h in headers], *[[EMPTY if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    aligned = list(right) + [False] * (len(headers) - len(right))
    for row in cells:
        line = "  ".join(
            (c.rjust(w) if aligned[i] else c.ljust(w)) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        out.write(line.rstrip() + "\n")


def as_json(out: TextIO, document: Any, lines: bool = False) -> None:
    """``document`` as JSON: indented for a document, compact on one line for a record of a stream."""
    out.write(json.dumps(document, ensure_ascii=False, default=str, indent=None if lines else 2) + "\n")


def _shown(raw: bytes | None, registry: RecordDecoder | None, subject: str, limit: int) -> Decoded:
    return decode(raw, "auto", limit=limit, registry=registry, subject=subject, one_line=limit <= LINE_LIMIT)


def _one_line(text: str, limit: int = LINE_LIMIT) -> str:
    line = " ".join(text.split()) if "\n" in text or "\r" in text or "\t" in text else text
    return line if len(line) <= limit else line[: limit - 1] + "…"


def record_json(message: Message, registry: RecordDecoder | None = None) -> dict[str, Any]:
    """One record for scripts: where it is, when, its key, value and headers losslessly (``wire_value``), the
    kind "auto" found, and a document read with the schema registry where the record is in its wire format."""
    found: dict[str, Any] = {
        "topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "timestamp": message.timestamp,
        "timestamp_type": message.timestamp_type,
    }
    if message.control is not None:
        return {**found, "control": message.control}
    for part, raw in (("key", message.key), ("value", message.value)):
        shown = _shown(raw, registry, f"{message.topic}-{part}", WHOLE_LIMIT)
        found[part] = wire_value(raw)
        found[f"{part}_kind"] = shown.kind
        if shown.schema is not None:
            found[f"{part}_document"] = shown.data
            found[f"{part}_schema"] = shown.schema
    found["headers"] = [{"name": name, "value": wire_value(raw)} for name, raw in message.headers]
    if message.transaction is not None:
        found["transaction"] = message.transaction
    return found


def record_line(message: Message, registry: RecordDecoder | None = None) -> str:
    """One record on one line: ``P:OFFSET  TIME  KEY  VALUE`` (key and value cut at LINE_LIMIT)."""
    where = f"{message.partition}:{message.offset}"
    if message.control is not None:
        return f"{where}  {when(message.timestamp)}  [{message.control} marker]"
    key = _shown(message.key, registry, f"{message.topic}-key", LINE_LIMIT)
    value = _shown(message.value, registry, f"{message.topic}-value", LINE_LIMIT)
    label = f" [{message.transaction}]" if message.transaction not in (None, "committed") else ""
    return (
        f"{where}  {when(message.timestamp)}  {_one_line(key.text) if key.kind != 'null' else '(no key)'}  "
        f"{_one_line(value.text) if value.kind != 'null' else '(null: a tombstone)'}{label}"
    )


def record_whole(out: TextIO, message: Message, registry: RecordDecoder | None = None) -> None:
    """One record over several lines: where, when, key, value (pretty-printed), headers."""
    out.write(f"topic      {message.topic}\npartition  {message.partition}\noffset     {message.offset:,}\n")
    out.write(f"timestamp  {when(message.timestamp)} ({message.timestamp_type})\n")
    if message.control is not None:
        out.write(f"control    a transaction's {message.control} marker\n")
        return
    if message.transaction is not None:
        out.write(f"transaction {message.transaction}\n")
    for part, raw in (("key", message.key), ("value", message.value)):
        shown = _shown(raw, registry, f"{message.topic}-{part}", WHOLE_LIMIT)
        schema = f", schema id {shown.schema.get('id')}" if shown.schema else ""
        out.write(f"{part:<10} ({shown.kind}, {size(shown.size)}{schema})\n")
        if shown.kind not in ("null", "empty"):
            out.write(shown.text.rstrip("\n") + "\n")
        if shown.error:
            out.write(f"           ({shown.error})\n")
    for name, raw in message.headers:
        header = _shown(raw, None, "", LINE_LIMIT)
        out.write(f"header     {name} = {_one_line(header.text)}\n")
