"""Messages as JSON for the API and downloads: bytes as text when UTF-8, base64 otherwise, and which. A key or
value a schema registry's schema reads (Avro, Protobuf, JSON Schema) is given as its decoded document instead:
``*_kind`` avro / protobuf / json_schema, ``*_encoding`` "json" (the text is the document's JSON), and
``*_schema`` {"id", "subject", "version", "type"}; ``*_error`` says why a framed record was not read (unknown
id, registry down) or why a JSON Schema document fails its schema."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse

from broker.decode import SCHEMA_KINDS, AvroSchema, Decoded, RecordDecoder, auto_data, decode, wire_value
from broker.errors import InvalidInput, NotFound
from broker.messages.log import Message, hidden_reason
from broker.messages.masking import masked_labels
from broker.schemas import wire
from console.access import Forbidden
from console.present.messages import Decoding, ShownMessage, decoding_for


def message_json(m: Message, decoding: Decoding | None = None) -> dict[str, Any]:
    """A message for the API. With the topic's ``decoding``, also ``key_kind`` and ``value_kind``: what
    the pages label it under auto (json, text, avro, binary, empty or null), whatever the transport
    ``*_encoding`` (text with a NUL byte is UTF-8 on the wire but binary to read)."""
    key, value = wire_value(m.key), wire_value(m.value)
    kinds: dict[str, Any] = {}
    if decoding is not None:
        kinds = {
            **_part("key", m.key, decoding.key_schema, decoding.registry, m.topic),
            **_part("value", m.value, decoding.value_schema, decoding.registry, m.topic),
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


def auto_kind(raw: bytes | None, schema: AvroSchema | None, registry: RecordDecoder | None = None) -> str:
    """``decode(raw, "auto", schema, registry=registry).kind`` without the text a page shows (a JSON value is
    not pretty-printed to be named json)."""
    kind = auto_data(raw)[0]
    if kind == "binary" and (schema is not None or (registry is not None and wire.is_framed(raw))):
        return decode(raw, "auto", schema, limit=0, registry=registry).kind  # what the schemas read
    return kind


def schema_fields(part: str, decoded: Decoded) -> dict[str, Any]:
    """The API's fields for a key or value ``part`` a registry's schema named: its kind, the schema, the
    decoded document as JSON text (when it read), and the reason it did not read or fails its schema."""
    fields: dict[str, Any] = {f"{part}_kind": decoded.kind, f"{part}_schema": decoded.schema}
    if decoded.kind in SCHEMA_KINDS:
        fields[part] = json.dumps(decoded.data, ensure_ascii=False)
        fields[f"{part}_encoding"] = "json"
    if decoded.error:
        fields[f"{part}_error"] = decoded.error
    return fields


def _part(
    part: str, raw: bytes | None, schema: AvroSchema | None, registry: RecordDecoder | None, topic: str
) -> dict[str, Any]:
    kind = auto_data(raw)[0]
    if kind != "binary" or (schema is None and (registry is None or not wire.is_framed(raw))):
        return {f"{part}_kind": kind}
    decoded = decode(raw, "auto", schema, limit=0, registry=registry, subject=f"{topic}-{part}")
    if decoded.schema is None:
        return {f"{part}_kind": decoded.kind}
    return schema_fields(part, decoded)


def messages_json(cluster: str, topic: str, messages: list[Message]) -> list[dict[str, Any]]:
    """:func:`message_json` of each message with its kinds. The topic's Avro schemas (a database query) and its
    registry are looked up only when a key or value is binary: no other kind depends on them."""
    found = []
    schemas: Decoding | None = None
    for m in messages:
        key_kind, value_kind = auto_data(m.key)[0], auto_data(m.value)[0]
        if key_kind == "binary" or value_kind == "binary":
            schemas = schemas or decoding_for(cluster, topic)
            found.append(message_json(m, schemas))
        else:
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
    found = {**message_json(shown.message), "key_kind": shown.key.kind, "value_kind": shown.value.kind}
    for part, decoded in (("key", shown.key), ("value", shown.value)):
        if decoded.schema is not None:
            found.update(schema_fields(part, decoded))
    return found


def csv_row(m: Message, masked_column: bool = False, data: dict[str, Any] | None = None) -> list[Any]:
    """A download's row; with ``masked_column``, what masking hid, separated by "; ", last. ``data``: the message
    as the API gives it, when already made (:func:`shown_json`: a registry record's document, not its bytes)."""
    data = data if data is not None else message_json(m)
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
    m: Message,
    part: str,
    isolation: str = "read_uncommitted",
    last_stable_offset: int | None = None,
    as_json: Decoding | None = None,
) -> HttpResponse:
    """The bytes of a message's ``part`` (``key`` or ``value``) as a file, exactly as Kafka holds them; with
    ``as_json`` (the topic's decoding), the document a registry's schema reads from them (or a JSON value) as
    a JSON file instead. Raises InvalidInput for another part or, as JSON, bytes that hold no document (with
    the reason), NotFound when that part is null (no bytes to give, which an empty file would hide: an empty
    key or value downloads as an empty file), when the offset is a transaction marker, and when a consumer of
    ``isolation`` is not given the record (read_committed: an aborted or open record, or any at or above the
    partition's ``last_stable_offset``). A masked part is given as JSON only (``m`` is the masked message)."""
    if part not in ("key", "value"):
        raise InvalidInput(f"download must be key or value, not {part[:20]!r}.")
    if as_json is None:
        check_raw_download(m, part)
    hidden = hidden_reason(m, isolation, last_stable_offset)
    if hidden is not None:
        raise NotFound(f"Nothing to download: {hidden}")
    raw = m.key if part == "key" else m.value
    if raw is None:
        what = "this message has no key (null)" if part == "key" else "its value is null (a tombstone)"
        raise NotFound(f"Nothing to download: {what}. Offset {m.offset} of partition {m.partition}.")
    if as_json is not None:
        return _json_download(m, part, raw, as_json)
    response = HttpResponse(raw, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{m.topic}-{m.partition}-{m.offset}.{part}.bin"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _json_download(m: Message, part: str, raw: bytes, decoding: Decoding) -> HttpResponse:
    schema = decoding.key_schema if part == "key" else decoding.value_schema
    decoded = decode(raw, "auto", schema, limit=0, registry=decoding.registry, subject=f"{m.topic}-{part}")
    if decoded.kind != "json" and decoded.kind not in SCHEMA_KINDS:
        why = f": {decoded.error}" if decoded.error else ""
        raise InvalidInput(f"The {part} of offset {m.offset} is {decoded.kind}, not a document to give as JSON{why}.")
    body = json.dumps(decoded.data, ensure_ascii=False, indent=2).encode("utf-8", "surrogatepass")
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{m.topic}-{m.partition}-{m.offset}.{part}.json"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
