"""A topic's uploaded Avro schemas on a page of messages: read from the database only when a record needs them
(a page of JSON or text never does), once per page, and a stored schema that no longer parses reported then."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from broker.messages.log import Message
from console.models import TopicSchema
from console.present.messages import decoding_for, show

pytestmark = pytest.mark.django_db

POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}


def message(value: bytes, offset: int = 0) -> Message:
    return Message("points", 0, offset, 1_700_000_000_000, "CreateTime", b"k", value, [])


def avro(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(POINT), record)
    return out.getvalue()


def test_a_page_of_json_never_reads_the_stored_schemas(django_assert_num_queries: Any) -> None:
    TopicSchema.objects.create(cluster="local", topic="points", part="value", schema=json.dumps(POINT))
    with django_assert_num_queries(0):
        decoding = decoding_for("local", "points", lazy=True)
        shown = [show("local", message(b'{"x": %d}' % i, i), decoding) for i in range(5)]
        assert decoding.schema_errors_met == ()
    assert [s.value.kind for s in shown] == ["json"] * 5


def test_binary_records_read_them_once(django_assert_num_queries: Any) -> None:
    TopicSchema.objects.create(cluster="local", topic="points", part="value", schema=json.dumps(POINT))
    decoding = decoding_for("local", "points", value_as="avro", lazy=True)
    with django_assert_num_queries(1):
        shown = [show("local", message(avro({"x": 200 + i}), i), decoding) for i in range(3)]
    assert [s.value.kind for s in shown] == ["avro"] * 3
    assert [s.value.data for s in shown] == [{"x": 200}, {"x": 201}, {"x": 202}]


def test_a_schema_that_no_longer_parses_is_told_when_it_mattered() -> None:
    TopicSchema.objects.create(cluster="local", topic="points", part="value", schema='{"type": "recrd"}')
    decoding = decoding_for("local", "points", lazy=True)
    before: tuple[str, ...] = decoding.schema_errors_met
    assert before == ()
    assert decoding.value_schema is None
    errors: tuple[str, ...] = decoding.schema_errors
    assert len(errors) == 1
    assert errors[0].startswith("The stored value schema does not parse")
    assert decoding.schema_errors_met == errors
    eager = decoding_for("local", "points")  # read at once, for callers in other threads
    assert eager.stored.was_read
    assert eager.schema_errors_met == errors
