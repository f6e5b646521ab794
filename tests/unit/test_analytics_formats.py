"""How the Spark jobs read topics in a schema registry's wire format (analytics.formats), with an in-memory
registry: the plan made before Spark starts (sampled ids, the subject's versions, the reader schema, what is
said on the job's page, the errors that stop a job), and the decoding in Spark of Avro written in two schema
versions (fastavro as the independent writer), Protobuf with a reference, nested messages and non-first
message indexes, JSON Schema, plain JSON, an unknown id and bytes that do not decode."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from google.protobuf import message_factory

from analytics.formats import SchemaUnavailable, TopicFormat, decode, plan_formats, read_protobuf, table
from broker.messages.ranges import PartitionRange, TopicRanges
from broker.schemas import protobuf, wire
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegisteredSchema, RegistryError, SchemaReference

V1 = {
    "type": "record",
    "name": "WebEvent",
    "fields": [
        {"name": "type", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "user_id", "type": "string"},
    ],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "url", "type": ["null", "string"], "default": None}]}
WHERE = 'syntax = "proto3";\npackage test.common;\nmessage Where { string url = 1; }\n'
EVENT = """syntax = "proto3";
package test.web;
import "common/where.proto";
message Other { string x = 1; }
message Event {
  string type = 1;
  int64 ts = 2;
  string user_id = 3;
  test.common.Where where = 4;
  message Inner { string note = 1; }
}
"""


class Memory:
    """A registry in memory: schemas by id, subjects' versions; ``down`` answers nothing."""

    def __init__(self) -> None:
        self.by_id: dict[int, RegisteredSchema] = {}
        self.subjects: dict[str, dict[int, int]] = {}
        self.down = False
        self.asked = 0

    def add(
        self, schema_id: int, kind: str, text: str, subject: str | None = None, version: int | None = None, refs=()
    ) -> None:
        self.by_id[schema_id] = RegisteredSchema(schema_id, kind, text, tuple(refs), subject, version)
        if subject is not None and version is not None:
            self.subjects.setdefault(subject, {})[version] = schema_id

    def _check(self) -> None:
        self.asked += 1
        if self.down:
            raise RegistryError("connection refused", status=0)

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        self._check()
        if schema_id not in self.by_id:
            raise RegistryError(f"Schema {schema_id} not found", status=404, code=40403)
        return self.by_id[schema_id]

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        self._check()
        versions = self.subjects.get(subject)
        if not versions:
            raise RegistryError(f"Subject {subject} not found", status=404, code=40401)
        number = max(versions) if version == "latest" else int(version)
        found = self.by_id[versions[number]]
        return RegisteredSchema(found.id, found.schema_type, found.text, found.references, subject, number)

    def versions(self, subject: str) -> list[int]:
        self._check()
        if subject not in self.subjects:
            raise RegistryError(f"Subject {subject} not found", status=404, code=40401)
        return sorted(self.subjects[subject])


def avro(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def ranges_of(topic: str, records: int = 10) -> TopicRanges:
    return TopicRanges([PartitionRange(topic, 0, 0, records)], 0)


def sampler(values: list[bytes | None]) -> Any:
    asked: list[tuple[str, int, int, int]] = []

    def read(topic: str, partition: int, offset: int, limit: int) -> list[bytes | None]:
        asked.append((topic, partition, offset, limit))
        return values[offset : offset + limit]

    read.asked = asked  # type: ignore[attr-defined]
    return read


def avro_registry() -> Memory:
    source = Memory()
    source.add(3, AVRO, json.dumps(V1), "web-value", 1)
    source.add(4, AVRO, json.dumps(V2), "web-value", 2)
    return source


def test_a_plain_json_topic_needs_no_registry() -> None:
    values: list[bytes | None] = [b'{"type": "page_view"}', None, b""]
    formats = plan_formats(ranges_of("web", 3), sampler(values), None)
    assert not formats.framed
    assert formats.notes() == []
    assert formats.topics["web"] == TopicFormat("web", sampled=3)


def test_avro_ids_come_from_the_sample_and_the_subjects_versions_read_into_the_latest() -> None:
    source = avro_registry()
    # Only v1 records in the sample: v2's id comes from the subject.
    values: list[bytes | None] = [wire.frame(3, avro(V1, {"type": "x", "ts": n, "user_id": "u"})) for n in range(50)]
    read = sampler(values)
    formats = plan_formats(ranges_of("web", 50), read, source)
    assert read.asked == [("web", 0, 0, 20), ("web", 0, 30, 20)]  # the first and the last records
    fmt = formats.topics["web"]
    assert [(s.id, s.version, s.reader_version) for s in fmt.schemas] == [(3, 1, 2), (4, 2, 2)]
    assert fmt.schemas[0].writer == json.dumps(V1)
    assert fmt.schemas[0].reader == fmt.schemas[1].reader == json.dumps(V2)
    assert formats.notes() == [
        "Read as web: Avro, schema id 3, subject web-value v1 (read as v2); Avro, schema id 4, subject web-value v2."
    ]


def test_an_id_of_another_subject_is_read_with_its_own_schema_and_unknown_ids_are_named() -> None:
    source = avro_registry()
    source.add(9, AVRO, json.dumps(V1), "other-value", 5)
    values: list[bytes | None] = [wire.frame(9, b"x"), wire.frame(77, b"x")]
    fmt = plan_formats(ranges_of("web", 2), sampler(values), source).topics["web"]
    nine = next(s for s in fmt.schemas if s.id == 9)
    assert (nine.subject, nine.version, nine.reader) == ("other-value", 5, json.dumps(V1))
    assert fmt.skipped == ("schema id 77: Schema 77 not found",)
    assert "Not read (their records count as not_json): schema id 77" in fmt.describe()


def test_framed_records_without_a_registry_or_with_one_down_stop_before_spark() -> None:
    values: list[bytes | None] = [wire.frame(3, b"x")]
    with pytest.raises(SchemaUnavailable, match=r"schema id 3\), and no schema registry is configured"):
        plan_formats(ranges_of("web", 1), sampler(values), None)
    source = avro_registry()
    source.down = True
    with pytest.raises(SchemaUnavailable, match="could not give their schemas: connection refused"):
        plan_formats(ranges_of("web", 1), sampler(values), source)


CUSTOMER = {
    "type": "record",
    "name": "Customer",
    "namespace": "test.shop",
    "fields": [{"name": "id", "type": "string"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "test.shop",
    "fields": [
        {"name": "buyer", "type": "Customer"},  # the referenced type, by its short name in its namespace
        {"name": "payer", "type": ["null", "test.shop.Customer"], "default": None},  # used again: by name
    ],
}


ORDER_WHOLE = {**ORDER, "fields": [{"name": "buyer", "type": CUSTOMER}, ORDER["fields"][1]]}


def order_registry() -> Memory:
    source = Memory()
    source.add(40, AVRO, json.dumps(CUSTOMER), "test.shop.Customer", 1)
    source.add(
        41,
        AVRO,
        json.dumps(ORDER),
        "orders-value",
        1,
        refs=[SchemaReference("test.shop.Customer", "test.shop.Customer", 1)],
    )
    return source


def test_an_avro_schema_with_references_gets_their_types_written_in_where_first_used() -> None:
    fmt = plan_formats(ranges_of("orders", 1), sampler([wire.frame(41, b"")]), order_registry()).topics["orders"]
    (schema,) = fmt.schemas
    whole = json.loads(schema.writer)
    assert whole["fields"][0]["type"] == CUSTOMER
    assert whole["fields"][1]["type"] == ["null", "test.shop.Customer"]
    assert schema.reader == schema.writer
    record = {"buyer": {"id": "b"}, "payer": {"id": "p"}}
    parsed = fastavro.parse_schema(whole)
    assert fastavro.schemaless_reader(io.BytesIO(avro(whole, record)), parsed) == record
    broken = order_registry()
    del broken.subjects["test.shop.Customer"]
    fmt = plan_formats(ranges_of("orders", 1), sampler([wire.frame(41, b"")]), broken).topics["orders"]
    assert fmt.schemas == ()
    assert "its reference test.shop.Customer v1" in fmt.skipped[0]


def proto_registry() -> tuple[Memory, Any]:
    source = Memory()
    source.add(21, PROTOBUF, WHERE, "common/where.proto", 1)
    source.add(
        22, PROTOBUF, EVENT, "proto-value", 1, refs=[SchemaReference("common/where.proto", "common/where.proto", 1)]
    )
    compiled = protobuf.compile_schema(source.by_id[22], source)
    return source, compiled


def test_protobuf_records_read_from_the_shipped_descriptors_by_their_message_indexes() -> None:
    source, compiled = proto_registry()
    event_cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName("test.web.Event"))
    inner_cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName("test.web.Event.Inner"))
    event: Any = event_cls(type="page_view", ts=1_764_000_000_123, user_id="u-1")
    event.where.url = "/a"
    values: list[bytes | None] = [
        wire.frame(22, wire.write_indexes([1]) + event.SerializeToString()),
        wire.frame(22, wire.write_indexes([1, 0]) + inner_cls(note="hi").SerializeToString()),
    ]
    fmt = plan_formats(ranges_of("proto", 2), sampler(values), source).topics["proto"]
    (schema,) = fmt.schemas
    assert schema.describe() == "Protobuf, schema id 22, subject proto-value v1"
    first = read_protobuf(22, schema.descriptors, schema.main, wire.split(values[0] or b"")[1])
    assert json.loads(first or "") == {
        "type": "page_view",
        "ts": "1764000000123",  # protobuf's JSON mapping: 64-bit integers as text
        "user_id": "u-1",
        "where": {"url": "/a"},
    }
    second = read_protobuf(22, schema.descriptors, schema.main, wire.split(values[1] or b"")[1])
    assert json.loads(second or "") == {"note": "hi"}
    assert read_protobuf(22, schema.descriptors, schema.main, b"\x02\x0a\xff") is None  # index out of range
    assert read_protobuf(22, schema.descriptors, schema.main, None) is None


@pytest.mark.spark
def test_spark_decodes_every_format_into_json_text_and_keeps_the_bytes_as_written(spark: Any) -> None:
    source = avro_registry()
    source.add(30, JSON_SCHEMA, '{"type": "object"}', "js-value", 1)
    orders = order_registry()
    source.by_id.update(orders.by_id)
    source.subjects.update(orders.subjects)
    proto_source, _ = proto_registry()
    source.by_id.update(proto_source.by_id)
    source.subjects.update(proto_source.subjects)
    _, compiled = proto_registry()
    event_cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName("test.web.Event"))
    rows = [
        ("web", wire.frame(3, avro(V1, {"type": "page_view", "ts": 5, "user_id": "u-1"}))),
        ("web", wire.frame(4, avro(V2, {"type": "page_view", "ts": 6, "user_id": "u-2", "url": "/b"}))),
        ("web", b'{"type": "share", "ts": 7}'),  # not framed: read as it is
        ("web", wire.frame(99, b"\x01")),  # an id the plan does not hold
        ("web", wire.frame(4, b"\xff\xff\xff")),  # bytes that are no v2 record
        ("js", wire.frame(30, b'{"type": "click", "ts": 8}')),
        ("proto", wire.frame(22, wire.write_indexes([1]) + event_cls(type="impression", ts=9).SerializeToString())),
        ("orders", wire.frame(41, avro(ORDER_WHOLE, {"buyer": {"id": "b-1"}, "payer": None}))),
    ]
    values = {topic: [v for t, v in rows if t == topic] for topic in ("web", "js", "proto", "orders")}
    plans = {
        topic: plan_formats(ranges_of(topic, len(vals)), sampler(list(vals)), source).topics[topic]
        for topic, vals in values.items()
    }
    from analytics.formats import Formats

    formats = Formats(plans)
    frame = spark.createDataFrame(
        [(t, n, b"k", v, 0) for n, (t, v) in enumerate(rows)],
        "topic string, offset long, key binary, value binary, timestamp long",
    )
    got = {r["offset"]: r for r in decode(frame, formats).collect()}
    assert json.loads(got[0]["value"]) == {"type": "page_view", "ts": 5, "user_id": "u-1"}  # v1 read as v2: url null
    assert json.loads(got[1]["value"]) == {"type": "page_view", "ts": 6, "user_id": "u-2", "url": "/b"}
    assert got[2]["value"] == '{"type": "share", "ts": 7}'
    assert got[2]["schema_id"] is None
    assert got[3]["value"] is None
    assert got[3]["schema_id"] == 99
    assert got[4]["value"] is None
    assert json.loads(got[5]["value"]) == {"type": "click", "ts": 8}
    assert json.loads(got[6]["value"])["ts"] == "9"
    assert json.loads(got[6]["value"])["type"] == "impression"
    assert json.loads(got[7]["value"]) == {"buyer": {"id": "b-1"}}
    assert [got[n]["size"] for n in range(len(rows))] == [1 + len(v) for _, v in rows]
    # For SQL: the Avro topic's documents as a struct in the latest version.
    fields = {
        r["offset"]: r["fields"]
        for r in table(frame.withColumn("partition", frame["offset"] * 0), formats, "web").collect()
    }
    assert fields[0].asDict() == {"type": "page_view", "ts": 5, "user_id": "u-1", "url": None}
    assert fields[1]["url"] == "/b"
    assert fields[2] is None


def test_only_the_subjects_latest_versions_join_the_ids_sampled() -> None:
    source = Memory()
    for version in range(1, 13):
        source.add(100 + version, AVRO, json.dumps(V1), "web-value", version)
    values: list[bytes | None] = [wire.frame(101, b"")]
    fmt = plan_formats(ranges_of("web", 1), sampler(values), source).topics["web"]
    assert [s.version for s in fmt.schemas] == [1, *range(3, 13)]
    asked = source.asked
    plan_formats(ranges_of("web", 1), sampler(values), source)
    assert source.asked - asked == 1 + 10 + 1  # the versions, the latest ten, the sampled id of v1
