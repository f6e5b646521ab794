"""Documents encoded in the wire format with registered schemas (broker/schemas/encode.py), read back with the
console's own decoders and with the libraries themselves (fastavro, protobuf, jsonschema), and every way a
document is refused: the field that is wrong named in the message."""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from google.protobuf import message_factory

from broker.decode import decode
from broker.schemas import protobuf, wire
from broker.schemas.encode import DocumentError, SchemaEncoder, SchemaUnusable, parse_document
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegistryError, SchemaReference
from broker.schemas.records import RecordDecoder
from tests.unit.test_schema_records import COMMON, SHOP, Memory

MONEY = {
    "type": "record",
    "name": "Money",
    "namespace": "test.common",
    "fields": [
        {"name": "currency", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "test.shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "total", "type": "test.common.Money"},
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Line",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
                },
            },
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID"]}},
        {"name": "tags", "type": {"type": "map", "values": "string"}, "default": {}},
        {"name": "note", "type": ["null", "string", "Line"], "default": None},
        {"name": "blob", "type": "bytes", "default": ""},
        {"name": "weight", "type": "double"},
    ],
}
DOCUMENT = {
    "id": 7,
    "total": {"currency": "EUR", "amount": "1234.50"},
    "lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}],
    "at": "2026-11-27T03:01:05.678+00:00",
    "day": "2026-11-27",
    "ref": "7f1c0000-0000-4000-8000-000000000001",
    "status": "PAID",
    "tags": {"gift": "yes"},
    "note": {"test.shop.Line": {"sku": "C", "qty": 3}},
    "blob": "\u0000\u00ff",
    "weight": 2,
}


def avro_source() -> Memory:
    source = Memory()
    source.add(21, AVRO, json.dumps(MONEY), subject="money", version=1)
    source.add(22, AVRO, json.dumps(ORDER), [SchemaReference("test.common.Money", "money", 1)], "orders-value", 1)
    return source


def refused(encoder: SchemaEncoder, subject: str, document: object, message: str | None = None) -> str:
    with pytest.raises(DocumentError) as caught:
        encoder.encode(subject, "latest", document, "value", message)
    assert caught.value.part == "value"
    return str(caught.value)


def test_avro_document_with_a_reference_nested_records_and_logical_types_reads_back_exactly() -> None:
    source = avro_source()
    encoded = SchemaEncoder(source).encode("orders-value", "latest", DOCUMENT, "value")
    assert encoded.data[:5] == b"\x00\x00\x00\x00\x16"  # magic byte 0, schema id 22
    assert (encoded.schema.subject, encoded.schema.version) == ("orders-value", 1)
    shown = decode(encoded.data, registry=RecordDecoder(source))
    assert shown.kind == "avro", shown.error
    assert shown.data == {**DOCUMENT, "note": {"sku": "C", "qty": 3}, "weight": 2.0}
    # fastavro itself, with the schema and its reference, reads what was written (an independent reader)
    named: dict[str, object] = {}
    fastavro.parse_schema(MONEY, named_schemas=named)
    plain: Any = fastavro.schemaless_reader(
        io.BytesIO(encoded.data[5:]), fastavro.parse_schema(ORDER, named_schemas=named)
    )
    assert plain["total"]["amount"] == Decimal("1234.50")
    assert plain["lines"][1] == {"sku": "B-2", "qty": 1}
    assert plain["blob"] == b"\x00\xff"


def test_avro_fields_with_defaults_may_be_left_out_and_unions_take_plain_or_wrapped_values() -> None:
    encoder = SchemaEncoder(avro_source())
    short = {k: v for k, v in DOCUMENT.items() if k not in ("tags", "note", "blob")}
    shown = decode(encoder.encode("orders-value", 1, short, "value").data, registry=RecordDecoder(encoder.source))
    data: Any = shown.data
    assert data["tags"] == {}
    assert data["note"] is None
    assert data["blob"] == ""
    for note in ("plain text", {"string": "plain text"}):
        data = encoder.encode("orders-value", 1, {**DOCUMENT, "note": note}, "value").data
        assert decode(data, registry=RecordDecoder(encoder.source)).data["note"] == "plain text"  # type: ignore[index]
    timestamp = encoder.encode("orders-value", 1, {**DOCUMENT, "at": 1764212465678, "day": 20419}, "value").data
    assert decode(timestamp, registry=RecordDecoder(encoder.source)).data["at"] == "2025-11-27T03:01:05.678+00:00"  # type: ignore[index]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"weight": "ten"}, "value.weight: expected a number (double), got 'ten'"),
        ({"id": "7"}, "value.id: expected a whole number (long), got '7'"),
        ({"id": 2**63}, "value.id: 9223372036854775808 is out of range for long"),
        ({"total": {"currency": "EUR", "amount": "12.345"}}, "value.total.amount: 12.345 has 3 decimal places"),
        ({"total": {"currency": "EUR", "amount": "123456789"}}, "value.total.amount: 123456789 has more than"),
        ({"total": {"currency": 5, "amount": "1"}}, "value.total.currency: expected a string, got 5"),
        ({"lines": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 1.5}]}, "value.lines[1].qty: expected a whole number"),
        ({"lines": [{"sku": "A", "qty": 1, "colour": "red"}]}, "value.lines[0].colour: record test.shop.Line has no"),
        ({"status": "LOST"}, "value.status: expected one of OPEN, PAID (enum test.shop.Status), got 'LOST'"),
        ({"at": "yesterday"}, "value.at: expected an ISO 8601 time"),
        ({"at": "2026-11-27T03:01:05.6789Z"}, "value.at: '2026-11-27T03:01:05.6789Z' is more precise"),
        ({"day": "27/11/2026"}, "value.day: expected a date such as '2026-11-27'"),
        ({"ref": "not-a-uuid"}, "value.ref: expected a UUID"),
        ({"tags": {"gift": 1}}, "value.tags.gift: expected a string, got 1"),
        ({"note": 5}, "value.note: expected one of the union's types (null, string, test.shop.Line), got 5"),
        ({"note": {"test.shop.Line": {"sku": "C"}}}, "value.note.qty: missing"),
        ({"blob": "\u20ac"}, "value.blob: bytes are written one code point U+0000-U+00FF per byte"),
        ({"colour": "red"}, "value.colour: record test.shop.Order has no such field"),
    ],
)
def test_avro_refuses_a_document_naming_the_field(change: dict[str, object], message: str) -> None:
    assert refused(SchemaEncoder(avro_source()), "orders-value", {**DOCUMENT, **change}).startswith(message)


def test_avro_refuses_a_missing_field_and_what_is_not_a_record() -> None:
    encoder = SchemaEncoder(avro_source())
    without = {k: v for k, v in DOCUMENT.items() if k != "weight"}
    assert refused(encoder, "orders-value", without) == (
        "value.weight: missing: a field of record test.shop.Order without a default"
    )
    assert refused(encoder, "orders-value", [1]).startswith("value: expected an object (record test.shop.Order)")


def test_the_document_text_is_json_and_a_mistake_says_where() -> None:
    assert parse_document('{"a": [1, 2]}', "key") == {"a": [1, 2]}
    with pytest.raises(DocumentError) as caught:
        parse_document('{"a": 1,\n "b": }', "value")
    assert str(caught.value) == "value: not valid JSON at line 2 column 7: Expecting value"
    with pytest.raises(DocumentError, match="NaN is not valid JSON"):
        parse_document("NaN", "value")


def proto_source() -> Memory:
    source = Memory()
    source.add(11, PROTOBUF, COMMON, subject="common/money.proto", version=1)
    source.add(12, PROTOBUF, SHOP, [SchemaReference("common/money.proto", "common/money.proto", 1)], "shop-value", 2)
    return source


def test_protobuf_first_message_is_index_zero_as_one_byte_and_nested_messages_get_their_indexes() -> None:
    source = proto_source()
    encoder = SchemaEncoder(source)
    ping = encoder.encode("shop-value", "latest", {"n": 5}, "value")
    assert ping.data == wire.frame(12, b"\x00" + b"\x08\x05")
    assert ping.message == "shop.v1.Ping"
    order = {
        "id": "o-1",
        "lines": [{"sku": "A", "price": {"currency": "EUR", "units": "12"}, "notes": [{"text": "gift"}]}],
        "at": "2026-11-27T03:00:00Z",
        "status": "PAID",
        "blob": base64.b64encode(b"\x00\xff").decode(),
    }
    written = encoder.encode("shop-value", 2, order, "value", message="shop.v1.Order")
    assert written.data[5:7] == wire.write_indexes([1])
    shown = decode(written.data, registry=RecordDecoder(source))
    assert shown.kind == "protobuf", shown.error
    assert shown.data == order
    # protobuf itself parses the message bytes after the indexes
    compiled = protobuf.compile_schema(source.by_id[12], source)
    cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName("shop.v1.Order"))
    parsed = cls.FromString(written.data[7:])
    assert parsed.lines[0].price.units == 12  # type: ignore[attr-defined]
    assert parsed.status == 1  # type: ignore[attr-defined]
    # a nested message by its name, and the package may be left out
    note = encoder.encode("shop-value", 2, {"text": "deep"}, "value", message="Order.Line.Note")
    assert note.data[5:9] == wire.write_indexes([1, 0, 0])
    assert decode(note.data, registry=RecordDecoder(source)).data == {"text": "deep"}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"id": "o", "lines": [{"sku": "A", "price": {"units": "ten"}}]}, "value.lines.price.units: "),
        ({"id": "o", "colour": "red"}, "value.colour: message shop.v1.Order has no such field"),
        ({"id": "o", "lines": [{"skew": "A"}]}, "value.lines.skew: message shop.v1.Order.Line has no such field"),
        ({"id": 5}, "value.id: "),
        ({"id": "o", "status": "LOST"}, "value.status: "),
        (["o"], "value: expected an object (message shop.v1.Order), got a list"),
    ],
)
def test_protobuf_refuses_a_document_naming_the_field(document: object, message: str) -> None:
    encoder = SchemaEncoder(proto_source())
    assert refused(encoder, "shop-value", document, message="shop.v1.Order").startswith(message)


def test_protobuf_an_unknown_message_name_lists_the_schemas_messages() -> None:
    text = refused(SchemaEncoder(proto_source()), "shop-value", {}, message="Nope")
    assert "the schema has no message Nope" in text
    assert "shop.v1.Order.Line.Note" in text


PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "address": {"$ref": "address.json"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def json_source() -> Memory:
    source = Memory()
    source.add(31, JSON_SCHEMA, json.dumps(ADDRESS), subject="address", version=1)
    source.add(32, JSON_SCHEMA, json.dumps(PERSON), [SchemaReference("address.json", "address", 1)], "people-value", 1)
    return source


def test_json_schema_document_checked_with_its_reference_and_written_as_json() -> None:
    source = json_source()
    person = {"name": "Zoë", "age": 30, "address": {"city": "Kyoto"}}
    encoded = SchemaEncoder(source).encode("people-value", "latest", person, "value")
    assert encoded.data[:5] == wire.frame(32, b"")
    assert json.loads(encoded.data[5:]) == person
    shown = decode(encoded.data, registry=RecordDecoder(source))
    assert (shown.kind, shown.data, shown.error) == ("json_schema", person, None)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"name": "Zoë", "age": "ten"}, "value.age: expected an integer, got 'ten'"),
        ({"name": "Zoë"}, "value.age: missing: a required property"),
        ({"name": "Zoë", "age": -1}, "value.age: -1 is less than the minimum of 0"),
        ({"name": "Zoë", "age": 1, "address": {"city": 5}}, "value.address.city: expected a string, got 5"),
        ({"name": "Zoë", "age": 1, "address": {}}, "value.address.city: missing"),
        ({"name": "Zoë", "age": 1, "x": 1}, "value: Additional properties are not allowed"),
    ],
)
def test_json_schema_refuses_a_document_naming_the_field(document: object, message: str) -> None:
    assert refused(SchemaEncoder(json_source()), "people-value", document).startswith(message)


def test_schemas_are_compiled_once_per_id_and_registry_errors_pass_on() -> None:
    source = proto_source()
    encoder = SchemaEncoder(source)
    encoder.encode("shop-value", "latest", {"n": 1}, "value")
    first = encoder._compiled[12]
    encoder.encode("shop-value", 2, {"n": 2}, "value")
    assert encoder._compiled[12] is first
    with pytest.raises(RegistryError) as caught:
        encoder.encode("nope-value", "latest", {}, "value")
    assert caught.value.code == 40401
    broken = Memory()
    broken.add(40, PROTOBUF, "syntax = 'proto3'; message {", subject="broken", version=1)
    with pytest.raises(SchemaUnusable, match="does not compile"):
        SchemaEncoder(broken).encode("broken", 1, {}, "key")
