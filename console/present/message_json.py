"""Messages as JSON for the API and downloads: bytes as text when UTF-8, base64 otherwise, and which."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse

from broker.decode import AvroSchema, auto_data, decode, wire_value
from broker.errors import InvalidInput, NotFound
from broker.messages.log import Message, hidden_reason
from broker.messages.masking import masked_labels
from console.access import Forbidden
from console.present.messages import Decoding, ShownMessage, decoding_for


def message_json(m: Message, decoding: Decoding | None = None) -> dict[str, Any]:
    """A message for the API. With the topic's ``decoding``, also ``key_kind`` and ``value_kind``: what
    the pages label it under auto (json, text, avro, binary, empty or null), whatever the transport
    ``*_encoding`` (text with a NUL byte is UTF-8 on the wire but binary to read)."""
    key, value = wire_value(m.key), wire_value(m.value)
    kinds = {}
    if decoding is not None:
        kinds = {
            "key_kind": auto_kind(m.key, decoding.key_schema),
            "value_kind": auto_kind(m.value, decoding.value_schema),
        }
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
        # committed, aborted, open (transactional records), or null; commit or abort on a marker row.
        "transaction": m.transaction,
        "control": m.control,
        "producer_id": m.producer_id,
        "producer_epoch": m.producer_epoch,
        # What masking hid from this user ("$.user.email", "key $.id", "~ card numbers"): the key, value and
        # headers above are the masked ones.
        "masked": list(masked_labels(m)),
        **kinds,
    }


def auto_kind(raw: bytes | None, schema: AvroSchema | None) -> str:
    """``decode(raw, "auto", schema).kind`` without the text a page shows (a JSON value is not pretty-printed
    to be named json)."""
    kind = auto_data(raw)[0]
    if kind == "binary" and schema is not None:
        return decode(raw, "auto", schema, limit=0).kind  # Avro when the schema reads it
    return kind


def messages_json(cluster: str, topic: str, messages: list[Message]) -> list[dict[str, Any]]:
    """:func:`message_json` of each message with its kinds. The topic's Avro schemas (a database query) are
    read only when a key or value is binary: no other kind depends on them."""
    found = []
    schemas: Decoding | None = None
    for m in messages:
        key_kind, value_kind = auto_data(m.key)[0], auto_data(m.value)[0]
        if key_kind == "binary" or value_kind == "binary":
            schemas = schemas or decoding_for(cluster, topic)
            if key_kind == "binary" and schemas.key_schema is not None:
                key_kind = auto_kind(m.key, schemas.key_schema)
            if value_kind == "binary" and schemas.value_schema is not None:
                value_kind = auto_kind(m.value, schemas.value_schema)
        found.append({**message_json(m), "key_kind": key_kind, "value_kind": value_kind})
    return found


def _header(name: str, raw: bytes | None) -> dict[str, Any]:
    wire = wire_value(raw)
    return {"name": name, "value": wire["data"], "value_encoding": wire["encoding"]}


CSV_COLUMNS = ["partition", "offset", "timestamp", "key_encoding", "key", "value_encoding", "value"]
# The last column of a download for a user some masking rule covers the topic for.
MASKED_COLUMN = "masked"


def shown_json(shown: ShownMessage) -> dict[str, Any]:
    """A message decoded under auto for a page (console.present.messages.show) for the API: message_json with the
    kinds the page already found."""
    return {**message_json(shown.message), "key_kind": shown.key.kind, "value_kind": shown.value.kind}


def csv_row(m: Message, masked_column: bool = False) -> list[Any]:
    """A download's row; with ``masked_column``, what masking hid, separated by "; ", last."""
    data = message_json(m)
    row = [data[column] for column in CSV_COLUMNS]
    return [*row, "; ".join(data["masked"])] if masked_column else row


def check_raw_download(m: Message, part: str) -> None:
    """Raise Forbidden when masking hid something of ``m``'s ``part`` from this user: the raw bytes are
    exactly what Kafka holds, so a masked part has none to give (the page and the API show it masked)."""
    labels = masked_labels(m)
    hidden = [x for x in labels if (x.startswith("key ") if part == "key" else not x.startswith(("key ", "header ")))]
    if hidden:
        raise Forbidden(
            f"The raw {part} of offset {m.offset} of partition {m.partition} is not given to your role: masking "
            f"hides {', '.join(hidden)} of it. The message's page and the API show it masked."
        )


def raw_download(
    m: Message, part: str, isolation: str = "read_uncommitted", last_stable_offset: int | None = None
) -> HttpResponse:
    """The bytes of a message's ``part`` (``key`` or ``value``) as a file, exactly as Kafka holds them.
    Raises InvalidInput for another part, NotFound when that part is null (no bytes to give, which an
    empty file would hide: an empty key or value downloads as an empty file), when the offset is a
    transaction marker, and when a consumer of ``isolation`` is not given the record (read_committed: an
    aborted or open record, or any at or above the partition's ``last_stable_offset``)."""
    if part not in ("key", "value"):
        raise InvalidInput(f"download must be key or value, not {part[:20]!r}.")
    check_raw_download(m, part)
    hidden = hidden_reason(m, isolation, last_stable_offset)
    if hidden is not None:
        raise NotFound(f"Nothing to download: {hidden}")
    raw = m.key if part == "key" else m.value
    if raw is None:
        what = "this message has no key (null)" if part == "key" else "its value is null (a tombstone)"
        raise NotFound(f"Nothing to download: {what}. Offset {m.offset} of partition {m.partition}.")
    response = HttpResponse(raw, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{m.topic}-{m.partition}-{m.offset}.{part}.bin"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
