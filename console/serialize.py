"""Messages as JSON for the API and downloads: bytes as text when UTF-8, base64 otherwise, and which."""

from __future__ import annotations

from typing import Any

from broker.decode import wire_value
from broker.messages import Message


def message_json(m: Message) -> dict[str, Any]:
    key, value = wire_value(m.key), wire_value(m.value)
    return {
        "partition": m.partition,
        "offset": m.offset,
        "timestamp": m.timestamp,
        "timestamp_type": m.timestamp_type,
        "key": key["data"],
        "key_encoding": key["encoding"],
        "value": value["data"],
        "value_encoding": value["encoding"],
        "headers": [_header(name, raw) for name, raw in m.headers],
        "size": m.size,
    }


def _header(name: str, raw: bytes | None) -> dict[str, Any]:
    wire = wire_value(raw)
    return {"name": name, "value": wire["data"], "value_encoding": wire["encoding"]}


CSV_COLUMNS = ["partition", "offset", "timestamp", "key_encoding", "key", "value_encoding", "value"]


def csv_row(m: Message) -> list[Any]:
    data = message_json(m)
    return [data[column] for column in CSV_COLUMNS]
