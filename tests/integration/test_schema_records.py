"""Records in a schema registry's wire format, written by confluent-kafka's own serializers against the real
registry (Apicurio from Maven Central, tests/conftest.py's schema_registry) to the real test cluster, and read
back through the console: the messages API, the message page, downloads, search and masking. Avro (logical
types), Protobuf (nested messages, a reference to another registered .proto, a non-first message index),
JSON Schema; keys too; an unknown schema id; a registry that is down."""

from __future__ import annotations

import asyncio
import base64
import csv
import importlib
import io
import json
import socket
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    reference_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from django.test import Client
from google.protobuf import json_format

from broker.local import launcher
from broker.messages.masking import parse_rules
from console.asgi import application
from tests.conftest import logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

TIMEOUT = 10  # seconds, every call confluent-kafka's client makes to the registry


@pytest.fixture
def registry(schema_registry: str, kafka_cluster: launcher.ClusterLayout) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry, "timeout": TIMEOUT})


@pytest.fixture
def client(registry: SchemaRegistryClient, clusters_reset: None) -> Iterator[Client]:
    from console.config.registry import reset_for_tests

    reset_for_tests()
    yield logged_in()
    reset_for_tests()


def serializer_conf() -> dict[str, Any]:
    return {"auto.register.schemas": True, "subject.name.strategy": topic_subject_name_strategy}


def page(client: Client, topic: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/clusters/local/topics/{topic}/partitions/0/messages", {"limit": 100, **params})
    assert response.status_code == 200, response.content
    return list(response.json()["messages"])


def document(message: dict[str, Any], part: str = "value") -> Any:
    assert message[f"{part}_encoding"] == "json", message
    return json.loads(message[part])


ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "test.shop",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "id", "type": "string"}]},
        },
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
ORDER_KEY = {"type": "record", "name": "OrderKey", "namespace": "test.shop", "fields": [{"name": "id", "type": "long"}]}


def avro_orders(registry: SchemaRegistryClient, topic: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Three Avro orders (key and value) written to ``topic`` with confluent-kafka's AvroSerializer; returns
    (key, value) as the console is to show them: logical types as ISO-8601 / plain decimal / canonical UUID."""
    keys = AvroSerializer(registry, json.dumps(ORDER_KEY), conf=serializer_conf())
    values = AvroSerializer(registry, json.dumps(ORDER), conf=serializer_conf())
    written, expected = [], []
    for n in range(3):
        ref = uuid.UUID(int=n + 1)
        value = {
            "id": n,
            "customer": {"id": str(41 + n)},
            "amount": Decimal(f"{n}12.3{n}"),
            "at": datetime(2026, 11, 27, 3, n, 5, 678000, tzinfo=UTC),
            "day": date(2026, 1, n + 1),
            "ref": str(ref),
            "status": "PAID" if n % 2 else "OPEN",
            "note": None if n == 0 else f"zoë {n}",
        }
        written.append(
            (
                keys({"id": n}, SerializationContext(topic, MessageField.KEY)),
                values(value, SerializationContext(topic, MessageField.VALUE)),
            )
        )
        expected.append(
            (
                {"id": n},
                {
                    **value,
                    "amount": format(Decimal(f"{n}12.3{n}"), "f"),
                    "at": f"2026-11-27T03:{n:02d}:05.678+00:00",
                    "day": f"2026-01-{n + 1:02d}",
                    "ref": str(ref),
                },
            )
        )
    produce(topic, written, partition=0)
    return expected


def test_avro_keys_and_values_read_back_exactly_with_their_schema(
    client: Client, registry: SchemaRegistryClient
) -> None:
    name = create_topic(unique("sr-avro"), partitions=1)
    expected = avro_orders(registry, name)
    value_id = registry.get_latest_version(f"{name}-value").schema_id
    key_id = registry.get_latest_version(f"{name}-key").schema_id
    messages = page(client, name)
    assert [(document(m, "key"), document(m)) for m in messages] == expected
    for m in messages:
        assert (m["key_kind"], m["value_kind"]) == ("avro", "avro")
        assert m["value_schema"] == {"id": value_id, "subject": f"{name}-value", "version": 1, "type": "AVRO"}
        assert m["key_schema"] == {"id": key_id, "subject": f"{name}-key", "version": 1, "type": "AVRO"}
    # The partition's list: each row's kind and its document on one line (HTML-escaped).
    listed = client.get(f"/clusters/local/topics/{name}/partitions/0/").content.decode()
    assert listed.count(f'title="schema id {value_id}">avro</span>') == 3
    assert "&quot;customer&quot;: {&quot;id&quot;: &quot;42&quot;}" in listed
    # One message: the API, the page (the document and a link to its subject), and the downloads.
    one = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages/1")
    assert one.status_code == 200
    assert document(one.json()) == expected[1][1]
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/").content.decode()
    assert f'href="/clusters/local/schemas/{name}-value/"' in html
    assert f"id {value_id} · {name}-value v1" in html
    assert "zoë 1" in html
    assert "2026-11-27T03:01:05.678+00:00" in html
    raw = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/", {"download": "value"})
    assert raw.status_code == 200
    assert raw.content[0] == 0
    assert int.from_bytes(raw.content[1:5], "big") == value_id
    as_json = client.get(
        f"/api/clusters/local/topics/{name}/partitions/0/messages/1", {"download": "value", "as": "json"}
    )
    assert as_json.status_code == 200
    assert as_json["Content-Type"].startswith("application/json")
    assert json.loads(as_json.content) == expected[1][1]


def test_find_by_key_takes_the_key_as_a_document_of_its_schema(client: Client, registry: SchemaRegistryClient) -> None:
    name = create_topic(unique("sr-key"), partitions=3)
    expected = avro_orders(registry, name)  # written to partition 0
    url = f"/api/clusters/local/topics/{name}/find-key/"
    found = client.get(url, {"key": '{"id": 2}', "key_format": "schema", "partitioner": "all"}).json()
    assert [(m["partition"], m["offset"]) for m in found["messages"]] == [(0, 2)]
    assert (document(found["messages"][0], "key"), document(found["messages"][0])) == expected[2]
    wrong = client.get(url, {"key": '{"id": "two"}', "key_format": "schema", "partitioner": "all"})
    assert wrong.status_code == 400
    assert "key.id" in wrong.json()["message"]
    page = client.get(
        f"/clusters/local/topics/{name}/find-key/", {"key": '{"id": 1}', "key_format": "schema", "partitioner": "all"}
    ).content.decode()
    assert 'id="msg-0-1"' in page


def test_search_filters_reach_into_avro_fields(client: Client, registry: SchemaRegistryClient) -> None:
    name = create_topic(unique("sr-search"), partitions=1)
    expected = avro_orders(registry, name)
    for query, offsets in (
        ('value.customer.id == "42"', [1]),
        ('value.status == "PAID"', [1]),  # an enum: its symbol is not in the record's bytes
        ("key.id >= 1", [1, 2]),
    ):
        response = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": query})
        assert response.status_code == 200, response.content
        found = response.json()["messages"]
        assert [m["offset"] for m in found] == offsets, query
        assert [document(m) for m in found] == [expected[o][1] for o in offsets]
    page_url = f"/clusters/local/topics/{name}/search/"
    downloaded = json.loads(client.get(page_url, {"q": 'value.customer.id == "42"', "format": "json"}).content)
    assert [document(m) for m in downloaded["messages"]] == [expected[1][1]]
    rows = list(csv.reader(io.StringIO(client.get(page_url, {"q": "key.id == 2", "format": "csv"}).content.decode())))
    assert rows[0] == ["partition", "offset", "timestamp", "key_encoding", "key", "value_encoding", "value"]
    assert (rows[1][3], json.loads(rows[1][4]), rows[1][5], json.loads(rows[1][6])) == (
        "json",
        expected[2][0],
        "json",
        expected[2][1],
    )


def test_masking_paths_reach_into_decoded_fields_on_every_surface(
    client: Client, registry: SchemaRegistryClient, settings: Any
) -> None:
    name = create_topic(unique("sr-masked"), partitions=1)
    avro_orders(registry, name)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"name": "who", "topics": name, "paths": ["$.customer.id"]}]))
    viewer = logged_in("viewer")
    messages = page(viewer, name)
    assert [json.loads(m["value"])["customer"]["id"] for m in messages] == ["••••"] * 3
    assert all(m["masked"] == ["$.customer.id"] for m in messages)
    html = viewer.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/").content.decode()
    assert '"42"' not in html
    assert "••••" in html
    search = viewer.get(f"/api/clusters/local/topics/{name}/search/", {"q": 'value.customer.id == "42"'}).json()
    assert search["messages"] == []  # what masking hides cannot be searched for
    raw = viewer.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/", {"download": "value"})
    assert raw.status_code == 403
    as_json = viewer.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/", {"download": "value", "as": "json"})
    assert as_json.status_code == 200
    assert json.loads(as_json.content)["customer"]["id"] == "••••"
    assert page(client, name)[1]["value_kind"] == "avro"  # an admin is shown it whole


COMMON = """syntax = "proto3";
package kazami.test.common;
message Money {
  string currency = 1;
  int64 units = 2;
}
"""

SHOP = """syntax = "proto3";
package kazami.test.shop;
import "kazami_test/common/money.proto";
import "google/protobuf/timestamp.proto";

message Ping {
  int32 n = 1;
}
message Order {
  message Line {
    string sku = 1;
    kazami.test.common.Money price = 2;
    message Note {
      string text = 1;
    }
    repeated Note notes = 3;
  }
  string id = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp at = 3;
  Status status = 4;
  bytes blob = 5;
  map<string, int32> counts = 6;
}
enum Status {
  UNKNOWN = 0;
  PAID = 1;
}
"""


@pytest.fixture(scope="module")
def shop_pb2(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Python classes of SHOP (and the file it imports) generated by protoc, as an application would have them."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("proto")
    (root / "kazami_test" / "common").mkdir(parents=True)
    (root / "kazami_test" / "common" / "money.proto").write_text(COMMON)
    (root / "kazami_test" / "shop.proto").write_text(SHOP)
    (root / "kazami_test" / "__init__.py").write_text("")
    (root / "kazami_test" / "common" / "__init__.py").write_text("")
    includes = str(Path(protoc.__file__).parent / "_proto")
    args = ["protoc", f"-I{root}", f"-I{includes}", f"--python_out={root}"]
    assert protoc.main([*args, "kazami_test/common/money.proto", "kazami_test/shop.proto"]) == 0
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("kazami_test.shop_pb2")
    finally:
        sys.path.remove(str(root))


def test_protobuf_records_with_a_reference_nested_messages_and_message_indexes(
    client: Client, registry: SchemaRegistryClient, shop_pb2: Any
) -> None:
    name = create_topic(unique("sr-proto"), partitions=1)
    conf = {**serializer_conf(), "reference.subject.name.strategy": reference_subject_name_strategy}
    context = SerializationContext(name, MessageField.VALUE)
    order = shop_pb2.Order(id="o-1", status=shop_pb2.PAID, blob=b"\x00\xff\x10")
    line = order.lines.add(sku="A-1")
    line.price.currency = "EUR"
    line.price.units = 1234567890123
    line.notes.add(text="gift")
    order.at.FromJsonString("2026-11-27T03:00:00.250Z")
    order.counts["x"] = 3
    orders = ProtobufSerializer(shop_pb2.Order, registry, conf)  # index [1]: the second message of the file
    note = shop_pb2.Order.Line.Note(text="nested")
    notes = ProtobufSerializer(shop_pb2.Order.Line.Note, registry, conf)  # index [1, 0, 0]
    keys = ProtobufSerializer(shop_pb2.Ping, registry, conf)  # index [0], written as one byte
    written = [
        (keys(shop_pb2.Ping(n=1), SerializationContext(name, MessageField.KEY)), orders(order, context)),
        (None, notes(note, context)),
    ]
    assert written[0][1][5:7] == b"\x02\x02"  # the index array of Order as Confluent writes it: [1]
    assert written[0][0] is not None
    assert written[0][0][5] == 0
    produce(name, written, partition=0)

    def as_json(message: Any) -> Any:
        return json_format.MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )

    messages = page(client, name)
    assert messages[0]["value_kind"] == "protobuf", messages[0].get("value_error")
    assert document(messages[0]) == as_json(order)
    assert document(messages[0])["lines"][0]["price"] == {"currency": "EUR", "units": "1234567890123"}
    assert document(messages[0], "key") == as_json(shop_pb2.Ping(n=1)) == {"n": 1}
    assert messages[1]["value_kind"] == "protobuf", messages[1].get("value_error")
    assert document(messages[1]) == {"text": "nested"}
    schema = messages[0]["value_schema"]
    assert (schema["subject"], schema["type"]) == (f"{name}-value", "PROTOBUF")
    registered = registry.get_latest_version(f"{name}-value")
    assert [r.name for r in registered.schema.references or []] == ["kazami_test/common/money.proto"]
    assert messages[0]["value"]
    assert base64.b64encode(b"\x00\xff\x10").decode() == document(messages[0])["blob"]


def test_json_schema_records_are_checked_and_shown(client: Client, registry: SchemaRegistryClient) -> None:
    name = create_topic(unique("sr-json"), partitions=1)
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Reading",
        "type": "object",
        "properties": {"sensor": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["sensor", "celsius"],
    }
    serializer = JSONSerializer(json.dumps(schema), registry, conf=serializer_conf())
    readings = [{"sensor": "s-1", "celsius": 21.5}, {"sensor": "ünï", "celsius": -3}]
    written = [(None, serializer(r, SerializationContext(name, MessageField.VALUE))) for r in readings]
    schema_id = registry.get_latest_version(f"{name}-value").schema_id
    assert schema_id is not None
    bad = bytes([0]) + schema_id.to_bytes(4, "big") + b'{"sensor": 5}'
    produce(name, [*written, (None, bad)], partition=0)
    messages = page(client, name)
    assert [document(m) for m in messages[:2]] == readings
    assert {m["value_kind"] for m in messages} == {"json_schema"}
    assert messages[0]["value_schema"] == {"id": schema_id, "subject": f"{name}-value", "version": 1, "type": "JSON"}
    assert document(messages[2]) == {"sensor": 5}
    assert "does not match its schema" in messages[2]["value_error"]
    assert "value_error" not in messages[0]


def test_an_unknown_schema_id_is_shown_as_bytes_with_the_reason(client: Client) -> None:
    name = create_topic(unique("sr-unknown"), partitions=1)
    raw = bytes([0]) + (2**31 - 7).to_bytes(4, "big") + b"\x02hello"
    produce(name, [(b"k", raw)], partition=0)
    (message,) = page(client, name)
    assert message["value_kind"] == "binary"
    assert f"schema id {2**31 - 7} is not in the registry" in message["value_error"]
    assert base64.b64decode(message["value"]) == raw  # the bytes intact
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/0/")
    assert html.status_code == 200
    assert "is not in the registry" in html.content.decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_registry_that_is_down_leaves_the_pages_answering(
    client: Client, registry: SchemaRegistryClient, schema_registry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from console.config.registry import reset_for_tests

    name = create_topic(unique("sr-down"), partitions=1)
    expected = avro_orders(registry, name)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", f"http://127.0.0.1:{free_port()}/apis/ccompat/v7")
    monkeypatch.setenv("SCHEMA_REGISTRY_TIMEOUT", "2")
    reset_for_tests()
    messages = page(client, name)
    assert [m["value_kind"] for m in messages] == ["binary"] * 3
    assert all("did not answer" in m["value_error"] for m in messages)
    assert all(base64.b64decode(m["value"])[0] == 0 for m in messages)
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/0/")
    assert html.status_code == 200
    assert "did not answer" in html.content.decode()
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", schema_registry)
    reset_for_tests()
    assert [document(m) for m in page(client, name)] == [v for _, v in expected]


def test_the_live_tail_decodes_registry_records_and_masks_their_fields(
    client: Client, registry: SchemaRegistryClient, settings: Any
) -> None:
    name = create_topic(unique("sr-tail"), partitions=1)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"name": "who", "topics": name, "paths": ["$.customer.id"]}]))
    viewer, admin = websocket_headers(logged_in("viewer")), websocket_headers(logged_in("admin"))

    async def scenario() -> tuple[str, str]:
        path = f"/ws/clusters/local/topics/{name}/tail/"
        sockets = [WebsocketCommunicator(application, path, headers=h) for h in (viewer, admin)]
        for ws in sockets:
            assert (await ws.connect())[0]
            await ws.receive_from(timeout=15)
        await asyncio.sleep(1.0)  # the tails' consumers have reached the end
        await asyncio.get_running_loop().run_in_executor(None, avro_orders, registry, name)
        pushed = []
        for ws in sockets:
            text = ""
            while "tail-rows" not in text:
                text = await ws.receive_from(timeout=15)
            pushed.append(text)
            await ws.disconnect()
        return pushed[0], pushed[1]

    seen_by_viewer, seen_by_admin = async_to_sync(scenario)()
    # The admin's rows show the decoded documents (HTML-escaped JSON lines), the viewer's the masked ones.
    assert "&quot;customer&quot;: {&quot;id&quot;: &quot;41&quot;" in seen_by_admin
    assert "2026-11-27T03:00:05.678+00:00" in seen_by_admin
    assert "&quot;customer&quot;: {&quot;id&quot;: &quot;••••&quot;" in seen_by_viewer
    assert "&quot;41&quot;" not in seen_by_viewer
    assert "2026-11-27T03:00:05.678+00:00" in seen_by_viewer


def test_the_segment_inspector_decodes_registry_records(client: Client, registry: SchemaRegistryClient) -> None:
    name = create_topic(unique("sr-disk"), assignments={0: [0]})
    expected = avro_orders(registry, name)
    base = f"/api/clusters/local/brokers/0/partitions/{name}/0/segments/"
    [segment] = client.get(base).json()["segments"]
    batches = client.get(f"{base}{segment['base_offset']}/batches", {"position": 0}).json()["batches"]
    records = []
    for batch in batches:
        url = f"{base}{segment['base_offset']}/batches/{batch['position']}/records"
        records += client.get(url).json()["records"]
    assert [(document(r, "key"), document(r)) for r in records] == expected
    assert {r["value_kind"] for r in records} == {"avro"}
    assert records[0]["value_schema"]["subject"] == f"{name}-value"
    page = f"/clusters/local/brokers/0/partitions/{name}/0/segments/{segment['base_offset']}/batches/0/"
    html = client.get(page).content.decode()
    assert "&quot;id&quot;: &quot;41&quot;" in html  # the document, pretty-printed
    assert "2026-11-27T03:00:05.678+00:00" in html
