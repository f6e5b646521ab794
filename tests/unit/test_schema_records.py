"""Records in a schema registry's wire format read with an in-memory registry (broker.schemas): wire framing
and message indexes, Avro, Protobuf (references, nested messages, message indexes, well-known imports),
JSON Schema, and every way a record cannot be read (bytes kept, reason told, never an exception)."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from google.protobuf import descriptor_pb2, message_factory

from broker.decode import decode
from broker.schemas import protobuf, wire
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegisteredSchema, RegistryError, SchemaReference
from broker.schemas.records import RecordDecoder


class Memory:
    """A SchemaSource over a dict, counting what it is asked."""

    def __init__(self) -> None:
        self.by_id: dict[int, RegisteredSchema] = {}
        self.by_subject: dict[tuple[str, int], RegisteredSchema] = {}
        self.asked = 0
        self.down = False

    def add(self, schema_id: int, schema_type: str, text: str, refs=(), subject=None, version=None):
        schema = RegisteredSchema(schema_id, schema_type, text, tuple(refs))
        self.by_id[schema_id] = schema
        if subject is not None:
            self.by_subject[(subject, version)] = RegisteredSchema(
                schema_id, schema_type, text, tuple(refs), subject, version
            )
        return schema

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        self.asked += 1
        if self.down:
            raise RegistryError("connection refused", status=0)
        if schema_id not in self.by_id:
            raise RegistryError(f"Schema {schema_id} not found", status=404, code=40403)
        return self.by_id[schema_id]

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        self.asked += 1
        for (name, number), schema in self.by_subject.items():
            if name == subject and (version == "latest" or number == version):
                return schema
        raise RegistryError(f"Subject {subject} not found", status=404, code=40401)

    def subjects_of_id(self, schema_id: int) -> list[tuple[str, int]]:
        return sorted((s, v) for (s, v), schema in self.by_subject.items() if schema.id == schema_id)


@pytest.mark.parametrize("indexes", [[0], [1], [2, 0, 5], [127, 300]])
def test_message_indexes_round_trip_and_zero_is_one_byte(indexes: list[int]) -> None:
    written = wire.write_indexes(indexes) + b"rest"
    assert wire.read_indexes(written) == (indexes, b"rest")
    assert wire.write_indexes([0]) == b"\x00"
    # what Confluent writes for [1]: count 1 -> zigzag 2, index 1 -> zigzag 2
    assert wire.write_indexes([1]) == b"\x02\x02"


def test_framing_splits_the_id_big_endian_and_refuses_what_is_not_framed() -> None:
    assert wire.split(b"\x00\x00\x00\x01\x07body") == (263, b"body")
    for raw in (b"", b"\x00\x00\x00", b"\x01\x00\x00\x00\x01x"):
        with pytest.raises(wire.WireError):
            wire.split(raw)
    with pytest.raises(wire.WireError):
        wire.read_indexes(b"\x04\x02")  # two indexes announced, one given


ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "id", "type": "string"}]},
        },
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}


def _avro(value: dict[str, Any], schema: dict[str, Any] = ORDER) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_an_avro_record_reads_with_its_schema_and_names_it() -> None:
    source = Memory()
    source.add(7, AVRO, json.dumps(ORDER), subject="orders-value", version=3)
    value = {
        "id": 42,
        "customer": {"id": "c-9"},
        "amount": Decimal("12.34"),
        "at": datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
    }
    registry = RecordDecoder(source)
    shown = decode(wire.frame(7, _avro(value)), registry=registry)
    assert shown.kind == "avro"
    assert shown.error is None
    assert shown.data == {"id": 42, "customer": {"id": "c-9"}, "amount": "12.34", "at": "2026-01-02T03:04:05.678+00:00"}
    assert shown.schema == {"id": 7, "subject": "orders-value", "version": 3, "type": "AVRO"}
    assert json.loads(shown.text) == shown.data
    asked = source.asked
    for _ in range(5):
        decode(wire.frame(7, _avro(value)), registry=registry)
    assert source.asked == asked  # compiled once per id


def test_bytes_that_do_not_read_unknown_ids_and_a_registry_that_is_down_are_binary_with_the_reason() -> None:
    source = Memory()
    source.add(7, AVRO, json.dumps(ORDER))
    registry = RecordDecoder(source)
    bad = wire.frame(7, b"\x01")
    shown = decode(bad, registry=registry)
    assert (shown.kind, shown.size) == ("binary", len(bad))
    assert "not valid Avro for schema 7" in (shown.error or "")
    unknown = decode(wire.frame(99, b"x"), registry=registry)
    assert unknown.kind == "binary"
    assert "schema id 99 is not in the registry" in (unknown.error or "")
    assert unknown.schema == {"id": 99, "subject": None, "version": None, "type": None}

    down = Memory()
    down.down = True
    registry = RecordDecoder(down)
    for schema_id in range(1, 50):
        shown = decode(wire.frame(schema_id, b"x"), registry=registry)
        assert shown.kind == "binary"
        assert "did not answer" in (shown.error or "")
    assert down.asked == 1  # a registry that is down is not asked once a record

    nothing = decode(wire.frame(3, b"x"), registry=RecordDecoder(None))
    assert nothing.kind == "binary"
    assert nothing.error == "schema id 3: no schema registry is configured for this cluster"
    assert decode(wire.frame(3, b"x")).error is None  # no registry asked for: auto as before


def test_a_schema_that_does_not_parse_is_told_once() -> None:
    source = Memory()
    source.add(5, AVRO, '{"type": "strin"}')
    source.add(6, PROTOBUF, "syntax = 'proto3'; message {")
    source.add(8, "XML", "<x/>")
    registry = RecordDecoder(source)
    assert 'unknown type "strin"' in (decode(wire.frame(5, b"x"), registry=registry).error or "")
    assert "protoc" in (decode(wire.frame(6, b"\x00x"), registry=registry).error or "")
    assert "cannot read: XML" in (decode(wire.frame(8, b"x"), registry=registry).error or "")
    asked = source.asked
    decode(wire.frame(5, b"x"), registry=registry)
    decode(wire.frame(6, b"x"), registry=registry)
    assert source.asked == asked


COMMON = """
syntax = "proto3";
package common.v1;
message Money { string currency = 1; int64 units = 2; }
"""

SHOP = """
syntax = "proto3";
package shop.v1;
import "common/money.proto";
import "google/protobuf/timestamp.proto";

message Ping { int32 n = 1; }
message Order {
  message Line {
    string sku = 1;
    common.v1.Money price = 2;
    message Note { string text = 1; }
    repeated Note notes = 3;
  }
  string id = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp at = 3;
  Status status = 4;
  bytes blob = 5;
}
enum Status { UNKNOWN = 0; PAID = 1; }
"""


def _proto_source() -> Memory:
    source = Memory()
    source.add(11, PROTOBUF, COMMON, subject="common/money.proto", version=1)
    source.add(12, PROTOBUF, SHOP, [SchemaReference("common/money.proto", "common/money.proto", 1)], "shop-value", 2)
    return source


def _classes(source: Memory) -> protobuf.ProtoSchema:
    return protobuf.compile_schema(source.by_id[12], source)


def test_protobuf_records_read_with_references_nested_messages_and_message_indexes() -> None:
    source = _proto_source()
    compiled = _classes(source)

    def cls(name: str):
        return message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName(name))

    order = cls("shop.v1.Order")(id="o-1", status=1, blob=b"\x00\xff")
    line = order.lines.add(sku="A")
    line.price.currency = "EUR"
    line.price.units = 12
    line.notes.add(text="gift")
    order.at.FromJsonString("2026-11-27T03:00:00Z")
    registry = RecordDecoder(source)
    shown = decode(wire.frame(12, wire.write_indexes([1]) + order.SerializeToString()), registry=registry)
    assert shown.kind == "protobuf", shown.error
    assert shown.data == {
        "id": "o-1",
        "lines": [{"sku": "A", "price": {"currency": "EUR", "units": "12"}, "notes": [{"text": "gift"}]}],
        "at": "2026-11-27T03:00:00Z",
        "status": "PAID",
        "blob": base64.b64encode(b"\x00\xff").decode(),
    }
    assert shown.schema == {"id": 12, "subject": "shop-value", "version": 2, "type": "PROTOBUF"}
    ping = decode(wire.frame(12, b"\x00" + cls("shop.v1.Ping")(n=5).SerializeToString()), registry=registry)
    assert ping.data == {"n": 5}
    note = cls("shop.v1.Order.Line.Note")(text="deep")
    nested = decode(wire.frame(12, wire.write_indexes([1, 0, 0]) + note.SerializeToString()), registry=registry)
    assert nested.data == {"text": "deep"}
    out_of_range = decode(wire.frame(12, wire.write_indexes([5]) + b""), registry=registry)
    assert out_of_range.kind == "binary"
    assert "message index 5 is out of range" in (out_of_range.error or "")
    garbage = decode(wire.frame(12, b"\x00\xff\xff\xff"), registry=registry)
    assert garbage.kind == "binary"
    assert "not valid Protobuf" in (garbage.error or "")


def test_a_protobuf_schema_registered_as_a_base64_descriptor_reads_too() -> None:
    source = _proto_source()
    compiled = _classes(source)
    proto = descriptor_pb2.FileDescriptorProto()
    proto.CopyFrom(compiled.file)
    proto.name = "shop.proto"
    text = base64.b64encode(proto.SerializeToString()).decode()
    source.add(13, PROTOBUF, text, [SchemaReference("common/money.proto", "common/money.proto", 1)])
    cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName("shop.v1.Ping"))
    shown = decode(wire.frame(13, b"\x00" + cls(n=9).SerializeToString()), registry=RecordDecoder(source))
    assert (shown.kind, shown.data) == ("protobuf", {"n": 9})


def test_a_missing_reference_is_told() -> None:
    source = Memory()
    source.add(12, PROTOBUF, SHOP, [SchemaReference("common/money.proto", "common/money.proto", 1)])
    shown = decode(wire.frame(12, b"\x00"), registry=RecordDecoder(source))
    assert shown.kind == "binary"
    assert "common/money.proto" in (shown.error or "")
    assert "could not be fetched" in (shown.error or "")


def test_json_schema_documents_are_checked_and_shown_even_when_they_fail() -> None:
    source = Memory()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    source.add(21, JSON_SCHEMA, json.dumps(schema), subject="j-value", version=1)
    registry = RecordDecoder(source)
    good = decode(wire.frame(21, b'{"n": 3, "s": "\xc3\xa9"}'), registry=registry)
    assert (good.kind, good.data, good.error) == ("json_schema", {"n": 3, "s": "é"}, None)
    bad = decode(wire.frame(21, b'{"n": "x"}'), registry=registry)
    assert (bad.kind, bad.data) == ("json_schema", {"n": "x"})
    assert "does not match its schema at n" in (bad.error or "")
    broken = decode(wire.frame(21, b"{nope"), registry=registry)
    assert broken.kind == "binary"
    assert "not valid JSON" in (broken.error or "")


ENUMS = {
    "type": "record",
    "name": "Payment",
    "fields": [
        {"name": "customer", "type": {"type": "record", "name": "C", "fields": [{"name": "id", "type": "string"}]}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID"]}},
    ],
}


@pytest.mark.parametrize(
    ("query", "matches"),
    [
        ('value.customer.id == "42"', True),
        ('value.customer.id == "43"', False),
        ('value.status == "PAID"', True),  # an enum symbol is not in the bytes: the probe must let it through
        ('value.customer.id startswith "4" and value.status == "OPEN"', False),
    ],
)
def test_search_filters_reach_into_decoded_fields_and_the_probe_lets_framed_records_through(
    query: str, matches: bool
) -> None:
    from broker.messages.filtering import LazyView, probe_for
    from broker.messages.log import Message
    from broker.messages.query import parse_query

    source = Memory()
    source.add(31, AVRO, json.dumps(ENUMS))
    raw = wire.frame(31, _avro({"customer": {"id": "42"}, "status": "PAID"}, ENUMS))
    message = Message("t", 0, 7, 1_700_000_000_000, "CreateTime", None, raw, [], None)
    parsed = parse_query(query)
    assert parsed.matches(LazyView(message, RecordDecoder(source))) is matches
    assert parsed.matches(LazyView(message)) is False  # without the registry: bytes, no fields
    probe = probe_for(parsed, framed=True)
    if probe is not None:
        assert probe.may_match(message)
        assert probe.may_hold(raw)
    if query == 'value.status == "PAID"':
        unaware = probe_for(parsed)
        assert unaware is not None
        assert not unaware.may_match(message)  # what the probe would have skipped without framed


def test_masking_paths_reach_registry_records_and_an_unreadable_one_is_hidden_whole() -> None:
    from broker.messages.masking import mask_bytes, parse_rules, registry_reader

    source = Memory()
    source.add(41, AVRO, json.dumps(ENUMS))
    raw = wire.frame(41, _avro({"customer": {"id": "42"}, "status": "PAID"}, ENUMS))
    rules = parse_rules(json.dumps([{"name": "who", "topics": "t", "paths": ["$.customer.id"]}]))
    masked, labels = mask_bytes(raw, rules, "", registry_reader(RecordDecoder(source)))
    assert json.loads(masked or b"") == {"customer": {"id": "••••"}, "status": "PAID"}
    assert labels == ["$.customer.id"]
    down = Memory()
    down.down = True
    masked, labels = mask_bytes(raw, rules, "", registry_reader(RecordDecoder(down)))
    assert (masked, labels) == ("••••".encode(), ["$"])
    patterns = parse_rules(json.dumps([{"name": "digits", "topics": "t", "regex": "4[0-9]"}]))
    masked, labels = mask_bytes(raw, patterns, "", registry_reader(RecordDecoder(down)))
    assert b"42" not in (masked or b"")  # a pattern still masks the bytes
    assert labels == ["~ digits"]


def test_an_avro_schema_with_references_reads_with_the_types_they_define() -> None:
    customer = {"type": "record", "name": "Customer", "namespace": "ref", "fields": [{"name": "id", "type": "string"}]}
    money = {
        "type": "record",
        "name": "Money",
        "namespace": "ref",
        "fields": [{"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}],
    }
    order = {
        "type": "record",
        "name": "Order",
        "namespace": "ref",
        "fields": [{"name": "customer", "type": "ref.Customer"}, {"name": "total", "type": "ref.Money"}],
    }
    source = Memory()
    source.add(51, AVRO, json.dumps(customer), subject="ref.Customer", version=1)
    source.add(52, AVRO, json.dumps(money), subject="ref.Money", version=3)
    refs = [SchemaReference("ref.Customer", "ref.Customer", 1), SchemaReference("ref.Money", "ref.Money", 3)]
    source.add(53, AVRO, json.dumps(order), refs, subject="orders-value", version=1)
    full = {**order, "fields": [{"name": "customer", "type": customer}, {"name": "total", "type": money}]}
    raw = wire.frame(53, _avro({"customer": {"id": "c-1"}, "total": {"amount": Decimal("9.99")}}, full))
    shown = decode(raw, registry=RecordDecoder(source))
    assert (shown.kind, shown.error) == ("avro", None)
    assert shown.data == {"customer": {"id": "c-1"}, "total": {"amount": "9.99"}}
    missing = Memory()
    missing.add(53, AVRO, json.dumps(order), refs)
    failed = decode(raw, registry=RecordDecoder(missing))
    assert failed.kind == "binary"
    assert "could not be fetched" in (failed.error or "")


def test_a_source_that_fails_otherwise_leaves_the_record_as_bytes_with_the_reason() -> None:
    class Broken(Memory):
        def schema_by_id(self, schema_id: int) -> RegisteredSchema:
            raise TimeoutError("another look-up of the same id took too long")

    shown = decode(wire.frame(9, b"x"), registry=RecordDecoder(Broken()))
    assert shown.kind == "binary"
    assert "TimeoutError: another look-up" in (shown.error or "")
    refused = Memory()
    refused.schema_by_id = lambda schema_id: (_ for _ in ()).throw(RegistryError("unauthorized", status=401))  # type: ignore[method-assign]
    assert "answered with an error" in (decode(wire.frame(9, b"x"), registry=RecordDecoder(refused)).error or "")
