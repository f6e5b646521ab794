"""What the schemas pages compute themselves: schemas pretty-printed, the diff of two versions, the full names a
schema defines, the subject naming strategies and the topics they point at, and how the console answers each
kind of registry error (the real registry's answers: tests/integration/test_schemas_*.py)."""

from __future__ import annotations

import json

import pytest

from broker.schemas import subjects
from broker.schemas.model import RegistryError
from console.views.schemas import registry_status

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "n", "type": "string"}]},
        },
        {"name": "state", "type": {"type": "enum", "name": "other.State", "symbols": ["NEW"]}},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": []}}},
    ],
}
PROTO = """syntax = "proto3";
package kz.orders;
// message Commented { }
import "common.proto";
message Order {
  string id = 1;
  message Line { string sku = 1; }
  enum State { NEW = 0; }
  repeated Line lines = 2;
  map<string, string> labels = 3;
}
message Refund { string order_id = 1; /* message NotThis { } */ }
"""


def test_avro_and_json_schema_are_pretty_printed_protobuf_kept() -> None:
    compact = json.dumps(ORDER, separators=(",", ":"))
    assert subjects.pretty(compact, "AVRO") == json.dumps(ORDER, indent=2)
    assert (
        subjects.pretty('{"type":"object","title":"Ünïcode"}', "JSON")
        == '{\n  "type": "object",\n  "title": "Ünïcode"\n}'
    )
    assert subjects.pretty("{not json", "AVRO") == "{not json"
    assert subjects.pretty("\n" + PROTO, "PROTOBUF") == PROTO.strip("\n")


def test_the_full_names_a_schema_defines() -> None:
    # A dotted name sets its own namespace only; Line takes its enclosing record's (Avro's rule).
    assert subjects.full_names(json.dumps(ORDER), "AVRO") == ["shop.Order", "shop.Customer", "other.State", "shop.Line"]
    assert subjects.full_names('"string"', "AVRO") == []
    assert subjects.full_names(PROTO, "PROTOBUF") == [
        "kz.orders.Order",
        "kz.orders.Order.Line",
        "kz.orders.Order.State",
        "kz.orders.Refund",
    ]
    assert subjects.full_names('{"title": "Invoice", "type": "object"}', "JSON") == ["Invoice"]
    assert subjects.full_names('{"type": "object"}', "JSON") == []


def test_a_change_of_spacing_is_no_difference_and_added_lines_are_numbered() -> None:
    compact = json.dumps(ORDER, separators=(",", ":"))
    assert subjects.diff(compact, json.dumps(ORDER, indent=4), "AVRO") == []
    grown = {**ORDER, "doc": "an order"}
    lines = subjects.diff(json.dumps(ORDER), json.dumps(grown), "AVRO")
    added = [line for line in lines if line.kind == "added"]
    removed = [line for line in lines if line.kind == "removed"]
    assert [line.text for line in added] == ["  ],", '  "doc": "an order"']
    assert [line.text for line in removed] == ["  ]"]
    assert lines[0].kind == "head"
    assert all(line.new is not None for line in added)
    assert all(line.old is not None for line in removed)


@pytest.mark.parametrize(
    ("subject", "names", "strategy", "topics"),
    [
        ("orders-value", ["shop.Order"], "topic", [("orders", "topic", "value")]),
        ("orders-key", [], "topic", [("orders", "topic", "key")]),
        ("gone-value", [], "topic", []),
        ("orders-shop.Order", ["shop.Order"], "topic-record", [("orders", "topic-record", None)]),
        ("shop.Order", ["shop.Order"], "record", []),
        ("whatever", ["shop.Order"], None, []),
    ],
)
def test_the_naming_strategies(
    subject: str, names: list[str], strategy: str | None, topics: list[tuple[str, str, str | None]]
) -> None:
    found_strategy, uses = subjects.strategy_of(subject, names, ["orders", "payments"])
    assert found_strategy == strategy
    assert [(u.topic, u.strategy, u.part) for u in uses] == topics


def test_a_record_subject_finds_the_topics_with_topic_record_subjects_of_its_name() -> None:
    every = ["shop.Order", "orders-shop.Order", "refunds-shop.Order", "ghost-shop.Order", "orders-value"]
    uses = subjects.record_subject_topics("shop.Order", every, ["orders", "refunds"])
    assert [u.topic for u in uses] == ["orders", "refunds"]


@pytest.mark.parametrize(
    ("status", "code", "answer"),
    [
        (0, None, (503, "registry_unavailable")),
        (401, 40101, (503, "registry_auth_failed")),
        (404, 40401, (404, "subject_not_found")),
        (404, 40402, (404, "version_not_found")),
        (404, 40403, (404, "schema_not_found")),
        (404, None, (404, "not_found")),
        (409, 409, (409, "incompatible")),
        (422, 42201, (422, "invalid_schema")),
        (422, 42203, (422, "invalid_compatibility_level")),
        (422, 42206, (422, "registry_refused")),
        (400, None, (400, "invalid_input")),
        (500, 50001, (503, "registry_error")),
        (502, None, (503, "registry_error")),
    ],
)
def test_registry_errors_become_http_answers(status: int, code: int | None, answer: tuple[int, str]) -> None:
    assert registry_status(RegistryError("x", status, code)) == answer
