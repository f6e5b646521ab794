"""The pure parts of client quotas: entities, checks of keys and values, the answer turned into rows, and the
request built from a change."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest
from django.http import QueryDict

from broker.errors import InvalidInput
from broker.security import quotas
from console.views.quotas import _api_change, form_entity


def entry(entity: dict[str, str | None], values: dict[str, float]) -> Any:
    return NS(
        entity=[NS(entity_type=t, entity_name=n) for t, n in entity.items()],
        values=[NS(key=k, value=v) for k, v in values.items()],
    )


def test_an_entity_is_ordered_and_a_null_name_is_the_default() -> None:
    assert quotas.parse_entity({"client-id": "app", "user": None}) == (("user", None), ("client-id", "app"))
    assert quotas.parse_entity({"client_id": " app "}) == (("client-id", "app"),)
    assert quotas.describe_entity((("user", None), ("client-id", "app"))) == "user <default>, client-id app"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({}, "Name the entity"),
        ({"group": "g"}, "Unknown entity type 'group'"),
        ({"ip": "10.0.0.1", "client-id": "a"}, "IP quota stands alone"),
        ({"user": ""}, "must be a name"),
        ({"user": 5}, "must be a name"),
    ],
)
def test_bad_entities_are_refused(raw: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        quotas.parse_entity(raw)


def test_keys_depend_on_the_kind_of_entity() -> None:
    client = quotas.parse_entity({"client-id": "a"})
    ip = quotas.parse_entity({"ip": None})
    assert quotas.check_ops(client, {"producer_byte_rate": "1024"}, []) == ({"producer_byte_rate": 1024.0}, [])
    assert quotas.check_ops(ip, {"connection_creation_rate": 5}, []) == ({"connection_creation_rate": 5.0}, [])
    with pytest.raises(InvalidInput, match="Unknown quota 'connection_creation_rate' for a client-id entity"):
        quotas.check_ops(client, {"connection_creation_rate": 5}, [])
    with pytest.raises(InvalidInput, match="Unknown quota 'producer_byte_rate' for a ip entity"):
        quotas.check_ops(ip, {}, ["producer_byte_rate"])
    with pytest.raises(InvalidInput, match="both set and removed"):
        quotas.check_ops(client, {"producer_byte_rate": 1}, ["producer_byte_rate"])
    with pytest.raises(InvalidInput, match="Nothing to change"):
        quotas.check_ops(client, {}, [])


@pytest.mark.parametrize(
    ("key", "raw", "reason"),
    [
        ("producer_byte_rate", -1, "cannot be negative"),
        ("request_percentage", "-0.5", "cannot be negative"),
        ("producer_byte_rate", 10.5, "whole number"),
        ("consumer_byte_rate", "fast", "must be a number"),
        ("request_percentage", float("nan"), "finite"),
        ("producer_byte_rate", True, "must be a number"),
        ("producer_byte_rate", 2.0**70, "too large"),
    ],
)
def test_bad_values_are_refused(key: str, raw: Any, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        quotas.parse_value(key, raw)


def test_fractions_where_kafka_takes_them_and_zero() -> None:
    assert quotas.parse_value("request_percentage", "12.5") == 12.5
    assert quotas.parse_value("controller_mutation_rate", 0) == 0.0


def test_the_answer_becomes_sorted_rows_with_whole_numbers_shown_whole() -> None:
    rows = quotas.build_quotas(
        [
            entry({"ip": "10.0.0.1"}, {"connection_creation_rate": 5.0}),
            entry({"client-id": "b"}, {"request_percentage": 50.5, "producer_byte_rate": 1024.0}),
            entry({"user": "alice", "client-id": None}, {"consumer_byte_rate": 2048.0}),
            entry({"client-id": None}, {"producer_byte_rate": 4096.0}),
            entry({"user": None}, {"consumer_byte_rate": 1.0}),
            entry({"client-id": "empty"}, {}),
        ]
    )
    assert [r.label for r in rows] == [
        "user <default>",
        "user alice, client-id <default>",
        "client-id <default>",
        "client-id b",
        "ip 10.0.0.1",
    ]
    b = rows[3].as_dict()
    assert b == {
        "entity": {"client-id": "b"},
        "kind": "client-id",
        "default": False,
        "label": "client-id b",
        "quotas": {"producer_byte_rate": 1024, "request_percentage": 50.5},
    }
    assert list(b["quotas"]) == ["producer_byte_rate", "request_percentage"]  # in the order of KEYS
    assert rows[1].as_dict()["entity"] == {"user": "alice", "client-id": None}
    assert rows[1].is_default


def test_the_alter_request_carries_the_entity_and_ops() -> None:
    entity = quotas.parse_entity({"user": None, "client-id": "app"})
    request = quotas.alter_request(entity, {"producer_byte_rate": 10.0}, ["request_percentage"], validate_only=True)
    [only] = request.entries
    assert [(e.entity_type, e.entity_name) for e in only.entity] == [("user", None), ("client-id", "app")]
    assert [(o.key, o.value, o.remove) for o in only.ops] == [
        ("producer_byte_rate", 10.0, False),
        ("request_percentage", 0.0, True),
    ]
    assert request.validate_only is True


def test_the_api_body_long_and_short() -> None:
    assert _api_change({"entity": {"client-id": "a"}, "set": {"producer_byte_rate": 1}, "remove": ["x"]}) == (
        (("client-id", "a"),),
        {"producer_byte_rate": 1},
        ["x"],
    )
    assert _api_change({"entity": {"user": None}, "key": "k", "value": 3}) == ((("user", None),), {"k": 3}, [])
    assert _api_change({"entity": {"user": None}, "key": "k", "remove": True}) == ((("user", None),), {}, ["k"])
    with pytest.raises(InvalidInput, match='"set" must be an object'):
        _api_change({"entity": {"user": "u"}, "set": [1]})


def test_the_page_form_names_each_component_or_its_default() -> None:
    assert form_entity(QueryDict("user=alice&client_id_default=1")) == (("user", "alice"), ("client-id", None))
    assert form_entity(QueryDict("ip=10.0.0.1&user=")) == (("ip", "10.0.0.1"),)
    with pytest.raises(InvalidInput, match="not both"):
        form_entity(QueryDict("user=alice&user_default=1"))
    with pytest.raises(InvalidInput, match="Give a user"):
        form_entity(QueryDict(""))
