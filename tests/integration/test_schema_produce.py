"""Producing with a registry schema (issue 28) against the real registry (Apicurio, tests/conftest.py's
schema_registry) and the real test cluster: documents written as JSON through the API and the produce page,
encoded by the console, and read back by confluent-kafka's own AvroDeserializer, ProtobufDeserializer and
JSONDeserializer (the independent check) and by the console's message pages; a document its schema refuses is
400 with the field named and nothing written; a registry that does not answer is said so, with no hang. The
topic page names the subjects its records use, with links, and the messages page the share of each schema id."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, reference_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from django.test import Client
from google.protobuf import json_format

from console.models import AuditEntry
from tests.conftest import BOOTSTRAP
from tests.integration import test_schema_records as records
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_schema_records import ORDER, ORDER_KEY, document, page, serializer_conf

# The registry, console client and generated Protobuf classes of the decoding tests, as fixtures here too.
client = records.client
registry = records.registry
shop_pb2 = records.shop_pb2

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


def raw_record(topic: str, offset: int, partition: int = 0) -> tuple[bytes | None, bytes | None]:
    """The key and value bytes at ``offset``, read by confluent-kafka's own consumer."""
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": unique("sp-read"), "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        for _ in range(30):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                assert message.offset() == offset
                return message.key(), message.value()
        raise AssertionError(f"no record at {topic}/{partition}@{offset}")
    finally:
        consumer.close()


def api_produce(client: Client, topic: str, body: dict[str, Any]) -> Any:
    return client.post(
        f"/api/clusters/local/topics/{topic}/produce/", json.dumps(body), content_type="application/json"
    )


def register(registry: SchemaRegistryClient, subject: str, text: str, kind: str) -> int:
    return int(registry.register_schema(subject, Schema(text, kind)))


ORDER_DOCUMENT = {
    "id": 7,
    "customer": {"id": "42"},
    "amount": "1234.50",
    "at": "2026-11-27T03:01:05.678+00:00",
    "day": "2026-11-27",
    "ref": "7f1c0000-0000-4000-8000-000000000001",
    "status": "PAID",
    "note": "zoë",
}


def test_avro_key_and_value_produced_through_the_api_read_back_by_confluents_deserializer(
    client: Client, registry: SchemaRegistryClient
) -> None:
    name = create_topic(unique("sp-avro"), partitions=1)
    key_id = register(registry, f"{name}-key", json.dumps(ORDER_KEY), "AVRO")
    value_id = register(registry, f"{name}-value", json.dumps(ORDER), "AVRO")
    answer = api_produce(
        client,
        name,
        {"key": {"id": 7}, "key_subject": f"{name}-key", "value": ORDER_DOCUMENT, "value_subject": f"{name}-value"},
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["value_schema"] == {"id": value_id, "subject": f"{name}-value", "version": 1, "type": "AVRO"}
    assert body["key_schema"]["id"] == key_id
    key, value = raw_record(name, body["offset"])
    assert value is not None
    assert value[:5] == b"\x00" + value_id.to_bytes(4, "big")
    read = AvroDeserializer(registry)(value, SerializationContext(name, MessageField.VALUE))
    assert read == {
        "id": 7,
        "customer": {"id": "42"},
        "amount": Decimal("1234.50"),
        "at": datetime(2026, 11, 27, 3, 1, 5, 678000, tzinfo=UTC),
        "day": date(2026, 11, 27),
        "ref": uuid.UUID("7f1c0000-0000-4000-8000-000000000001"),
        "status": "PAID",
        "note": "zoë",
    }
    assert AvroDeserializer(registry)(key, SerializationContext(name, MessageField.KEY)) == {"id": 7}
    shown = page(client, name)[0]
    assert shown["value_kind"] == "avro", shown.get("value_error")
    assert document(shown) == ORDER_DOCUMENT
    assert document(shown, "key") == {"id": 7}
    entry = AuditEntry.objects.filter(action="message.produce", target=name).latest("at")
    assert entry.outcome == "done"
    assert entry.params["value_schema"] == {"subject": f"{name}-value", "version": "latest"}
    assert entry.params["value_bytes"] == len(value)


def test_a_refused_document_is_400_with_the_field_and_nothing_is_written(
    client: Client, registry: SchemaRegistryClient
) -> None:
    name = create_topic(unique("sp-bad"), partitions=1)
    register(registry, f"{name}-value", json.dumps(ORDER), "AVRO")
    refused = api_produce(client, name, {"value": {**ORDER_DOCUMENT, "id": "ten"}, "value_subject": f"{name}-value"})
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"] == "invalid_input"
    assert refused.json()["message"] == "value.id: expected a whole number (long), got 'ten'"
    assert refused.json()["fields"] == {"value": ["value.id: expected a whole number (long), got 'ten'"]}
    nested = api_produce(
        client, name, {"value": {**ORDER_DOCUMENT, "customer": {"id": 42}}, "value_subject": f"{name}-value"}
    )
    assert nested.json()["message"] == "value.customer.id: expected a string, got 42"
    text = api_produce(client, name, {"value": '{"id": 1,', "value_format": "schema", "value_subject": f"{name}-value"})
    assert text.status_code == 400
    assert text.json()["message"].startswith("value: not valid JSON at line 1 column 10")
    unknown = api_produce(client, name, {"value": ORDER_DOCUMENT, "value_subject": f"{name}-nope"})
    assert unknown.status_code == 404, unknown.content
    assert unknown.json()["error"] == "subject_not_found"
    no_subject = api_produce(client, name, {"value": ORDER_DOCUMENT, "value_format": "schema"})
    assert no_subject.status_code == 400
    assert "value_subject" in no_subject.json()["fields"]
    assert page(client, name) == []
    assert not AuditEntry.objects.filter(action="message.produce", target=name).exists()


def test_protobuf_with_a_reference_nested_messages_and_indexes_read_back_by_confluents_deserializer(
    client: Client, registry: SchemaRegistryClient, shop_pb2: Any
) -> None:
    name = create_topic(unique("sp-proto"), partitions=1)
    conf = {**serializer_conf(), "reference.subject.name.strategy": reference_subject_name_strategy}
    # confluent-kafka's serializers register the .proto (and the file it imports, as a reference) first
    ProtobufSerializer(shop_pb2.Order, registry, conf)(shop_pb2.Order(), SerializationContext(name, MessageField.VALUE))
    ProtobufSerializer(shop_pb2.Ping, registry, conf)(shop_pb2.Ping(), SerializationContext(name, MessageField.KEY))
    html = client.get(f"/clusters/local/topics/{name}/produce/").content.decode()
    assert '<datalist id="value-messages"><option value="kazami.test.shop.Ping">' in html  # the first: the default
    assert '<option value="kazami.test.shop.Order.Line.Note">' in html
    order = shop_pb2.Order(id="o-1", status=shop_pb2.PAID, blob=b"\x00\xff\x10")
    line = order.lines.add(sku="A-1")
    line.price.currency = "EUR"
    line.price.units = 1234567890123
    line.notes.add(text="gift")
    order.at.FromJsonString("2026-11-27T03:00:00.250Z")
    order.counts["x"] = 3
    answer = api_produce(
        client,
        name,
        {
            "key": {"n": 5},
            "key_subject": f"{name}-key",
            "value": json_format.MessageToDict(order, preserving_proto_field_name=True),
            "value_subject": f"{name}-value",
            "value_message": "kazami.test.shop.Order",
        },
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["value_schema"]["message"] == "kazami.test.shop.Order"
    key, value = raw_record(name, answer.json()["offset"])
    assert value is not None
    assert key is not None
    assert value[5:7] == b"\x02\x02"  # message indexes [1], as Confluent writes them
    assert key[5] == 0  # [0] as the single byte 0
    deserialize = ProtobufDeserializer(shop_pb2.Order, {"use.deprecated.format": False})
    assert deserialize(value, SerializationContext(name, MessageField.VALUE)) == order
    keys = ProtobufDeserializer(shop_pb2.Ping, {"use.deprecated.format": False})
    assert keys(key, SerializationContext(name, MessageField.KEY)) == shop_pb2.Ping(n=5)
    note = api_produce(
        client,
        name,
        {"value": {"text": "deep"}, "value_subject": f"{name}-value", "value_message": "Order.Line.Note"},
    )
    assert note.status_code == 201, note.content
    _, nested = raw_record(name, note.json()["offset"])
    assert nested is not None
    notes = ProtobufDeserializer(shop_pb2.Order.Line.Note, {"use.deprecated.format": False})
    assert notes(nested, SerializationContext(name, MessageField.VALUE)) == shop_pb2.Order.Line.Note(text="deep")
    assert [document(m) for m in page(client, name)][1] == {"text": "deep"}
    wrong = api_produce(
        client,
        name,
        {
            "value": {"id": "o", "lines": [{"price": {"units": "many"}}]},
            "value_subject": f"{name}-value",
            "value_message": "kazami.test.shop.Order",
        },
    )
    assert wrong.status_code == 400
    assert wrong.json()["message"].startswith("value.lines.price.units: ")


def test_json_schema_document_produced_and_read_back_by_confluents_deserializer(
    client: Client, registry: SchemaRegistryClient
) -> None:
    name = create_topic(unique("sp-json"), partitions=1)
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Reading",
        "type": "object",
        "properties": {"sensor": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["sensor", "celsius"],
    }
    register(registry, f"{name}-value", json.dumps(schema), "JSON")
    reading = {"sensor": "t-1", "celsius": 21.5}
    answer = api_produce(client, name, {"value": json.dumps(reading), "value_subject": f"{name}-value"})
    assert answer.status_code == 201, answer.content
    _, value = raw_record(name, answer.json()["offset"])
    read = JSONDeserializer(json.dumps(schema))(value, SerializationContext(name, MessageField.VALUE))
    assert read == reading
    refused = api_produce(
        client, name, {"value": {"sensor": "t-1", "celsius": "warm"}, "value_subject": f"{name}-value"}
    )
    assert refused.status_code == 400
    assert refused.json()["message"] == "value.celsius: expected a number, got 'warm'"


def test_the_produce_page_chooses_the_topics_subject_keeps_input_on_an_error_and_sends(
    client: Client, registry: SchemaRegistryClient
) -> None:
    name = create_topic(unique("sp-page"), partitions=1)
    value_id = register(registry, f"{name}-value", json.dumps(ORDER), "AVRO")
    url = f"/clusters/local/topics/{name}/produce/"
    html = client.get(url).content.decode()
    assert '<option value="schema" selected>' in html
    assert f'value="{name}-value"' in html
    assert f"schema id {value_id}" in html  # the chosen schema is shown
    form = {
        "key_format": "text",
        "key": "k-1",
        "value_format": "schema",
        "value_subject": f"{name}-value",
        "value_version": "1",
        "value": json.dumps({**ORDER_DOCUMENT, "amount": "12.345"}),
        "header_format": "text",
    }
    refused = client.post(url, form)
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "value.amount: 12.345 has 3 decimal places; the schema&#x27;s scale is 2" in text
    assert "12.345" in text.split('name="value"', 1)[1]  # the document typed is kept in its field
    sent = client.post(url, {**form, "value": json.dumps(ORDER_DOCUMENT)})
    assert sent.status_code == 200
    assert "Written to partition" in sent.content.decode()
    _, value = raw_record(name, 0)
    assert AvroDeserializer(registry)(value, SerializationContext(name, MessageField.VALUE))["amount"] == Decimal(
        "1234.50"
    )
    browse = client.get(f"/clusters/local/topics/{name}/partitions/0/").content.decode()
    assert 'id="schema-shares"' in browse
    assert f'data-schema-id="{value_id}"' in browse
    assert "1 of 1" in browse


def test_the_topic_page_names_its_subjects_with_links(client: Client, registry: SchemaRegistryClient) -> None:
    name = create_topic(unique("sp-topic"), partitions=1)
    register(registry, f"{name}-value", json.dumps(ORDER), "AVRO")
    register(registry, f"{name}-test.shop.OrderKey", json.dumps(ORDER_KEY), "AVRO")
    html = client.get(f"/clusters/local/topics/{name}/").content.decode()
    assert f'href="/clusters/local/schemas/{name}-value/"' in html
    assert f'href="/clusters/local/schemas/{name}-test.shop.OrderKey/"' in html
    assert "topic-record" in html
    assert f"{name}-key</span>" in html  # said to be missing


@pytest.fixture
def silent_registry() -> Iterator[str]:
    """A registry address that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/apis/ccompat/v7"


def test_a_registry_that_does_not_answer_is_said_so_without_a_hang(
    client: Client, schema_registry: str, silent_registry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from console.config.registry import reset_for_tests

    name = create_topic(unique("sp-down"), partitions=1)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", silent_registry)
    monkeypatch.setenv("SCHEMA_REGISTRY_TIMEOUT", "1")
    reset_for_tests()
    html = client.get(f"/clusters/local/topics/{name}/produce/")
    assert html.status_code == 200
    assert "did not answer within 1 s" in html.content.decode()
    answer = api_produce(client, name, {"value": {"id": 1}, "value_subject": f"{name}-value"})
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"] == "registry_unavailable"
    plain = api_produce(client, name, {"value": "still writable"})
    assert plain.status_code == 201
    topic_page = client.get(f"/clusters/local/topics/{name}/").content.decode()
    assert 'id="topic-schemas-error"' in topic_page
    monkeypatch.delenv("SCHEMA_REGISTRY_URL")
    reset_for_tests()
    none = client.get(f"/clusters/local/topics/{name}/").content.decode()
    assert 'id="topic-schemas-none"' in none
    assert "SCHEMA_REGISTRY_URL" in none
    produce_page = client.get(f"/clusters/local/topics/{name}/produce/").content.decode()
    assert 'id="registry-none"' in produce_page
    unconfigured = api_produce(client, name, {"value": {"id": 1}, "value_subject": f"{name}-value"})
    assert unconfigured.status_code == 400
    assert unconfigured.json()["message"].startswith("No schema registry is configured for cluster 'local'")
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", schema_registry)
    reset_for_tests()
