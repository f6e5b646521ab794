"""Broker configs from raw describe_configs answers, compared across brokers, and changes checked before
anything is sent (no Kafka)."""

from __future__ import annotations

from typing import Any

import pytest

from broker.cluster.broker_configs import (
    BrokerConfigs,
    ClusterConfigs,
    _reason,
    applied,
    build_rows,
    check_change,
    filter_rows,
    parse_entry,
    source_name,
)
from broker.errors import InvalidInput


def raw(value: str | None, source: str = "DEFAULT_CONFIG", **more: Any) -> dict[str, Any]:
    return {"value": value, "config_source": source, "read_only": False, "is_sensitive": False, **more}


def broker(number: int, /, **configs: dict[str, Any]) -> BrokerConfigs:
    return BrokerConfigs(number, {n.replace("_", "."): parse_entry(n.replace("_", "."), c) for n, c in configs.items()})


def test_it_maps_kafka_config_sources_by_name_and_number() -> None:
    assert source_name("STATIC_BROKER_CONFIG") == "static"
    assert source_name("ConfigSourceType.DYNAMIC_BROKER_CONFIG") == "dynamic_broker"
    assert source_name("DYNAMIC_DEFAULT_BROKER_CONFIG") == "dynamic_default"
    assert source_name("DEFAULT_CONFIG") == "default"
    assert [source_name(n) for n in (2, 3, 4, 5)] == ["dynamic_broker", "dynamic_default", "static", "default"]
    assert source_name(99) == source_name("NONSENSE") == "unknown"


def test_a_sensitive_value_is_never_kept_even_if_a_broker_sent_one() -> None:
    entry = parse_entry(
        "ssl.key.password",
        raw("s3cret", "DYNAMIC_BROKER_CONFIG", is_sensitive=True, synonyms=[{"name": "x", "value": "s3", "source": 2}]),
    )
    assert entry.value is None
    assert entry.shown == "hidden"
    assert entry.sensitive
    assert entry.as_dict()["value"] is None
    assert entry.synonyms[0].value is None


def test_synonyms_say_what_lies_under_a_dynamic_value() -> None:
    entry = parse_entry(
        "message.max.bytes",
        raw(
            "2000000",
            "DYNAMIC_BROKER_CONFIG",
            synonyms=[
                {"name": "message.max.bytes", "value": "2000000", "source": "DYNAMIC_BROKER_CONFIG"},
                {"name": "message.max.bytes", "value": "1500000", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"},
                {"name": "message.max.bytes", "value": "1048588", "source": "DEFAULT_CONFIG"},
            ],
        ),
    )
    assert entry.dynamic
    assert entry.source_label == "dynamic · broker"
    assert entry.synonym("dynamic_default") is not None
    assert [s.source for s in entry.synonyms] == ["dynamic_broker", "dynamic_default", "default"]
    assert entry.as_dict() == {
        "name": "message.max.bytes",
        "value": "2000000",
        "source": "dynamic_broker",
        "read_only": False,
        "sensitive": False,
        "synonyms": [
            {"name": "message.max.bytes", "value": "2000000", "source": "dynamic_broker"},
            {"name": "message.max.bytes", "value": "1500000", "source": "dynamic_default"},
            {"name": "message.max.bytes", "value": "1048588", "source": "default"},
        ],
    }


def test_a_row_differs_only_when_brokers_that_answered_disagree() -> None:
    brokers = [
        broker(
            0, message_max_bytes=raw("1"), broker_id=raw("0", "STATIC_BROKER_CONFIG"), pw=raw(None, is_sensitive=True)
        ),
        broker(
            1, message_max_bytes=raw("1"), broker_id=raw("1", "STATIC_BROKER_CONFIG"), pw=raw(None, is_sensitive=True)
        ),
        BrokerConfigs(2, error="did not answer in time"),
    ]
    rows = {r.name: r for r in build_rows(brokers)}
    assert not rows["message.max.bytes"].differs
    assert rows["broker.id"].differs
    assert not rows["pw"].differs
    assert rows["pw"].sensitive
    assert set(rows["broker.id"].entries) == {0, 1}  # the silent broker has no cells


def test_a_value_set_on_one_broker_only_differs_and_counts_as_dynamic() -> None:
    configs = ClusterConfigs(
        [
            broker(0, message_max_bytes=raw("2000000", "DYNAMIC_BROKER_CONFIG"), log_cleaner_threads=raw("1")),
            broker(1, message_max_bytes=raw("1048588"), log_cleaner_threads=raw("1")),
        ]
    )
    assert [r.name for r in configs.rows("differs")] == ["message.max.bytes"]
    assert [r.name for r in configs.rows("dynamic")] == ["message.max.bytes"]
    assert [r.name for r in configs.rows(query="CLEANER")] == ["log.cleaner.threads"]
    assert filter_rows(configs.rows(), "differs", "cleaner") == []
    as_dict = configs.as_dict()
    assert as_dict["brokers"] == [{"id": 0, "error": None}, {"id": 1, "error": None}]
    first = as_dict["configs"][1]
    assert first["name"] == "message.max.bytes"
    assert first["differs"]
    assert first["values"]["0"] == {"value": "2000000", "source": "dynamic_broker"}


def test_a_change_is_checked_before_anything_is_sent() -> None:
    check_change({"message.max.bytes": "2000000"}, ["log.cleaner.backoff.ms"])
    for chosen, delete in (({}, []), ({"bad name!": "1"}, []), ({"a.b": "1"}, ["a.b"]), ({}, ["../x"])):
        with pytest.raises(InvalidInput):
            check_change(chosen, delete)
    with pytest.raises(InvalidInput):
        check_change({"a.b": 1}, [])  # type: ignore[dict-item]


def test_kafkas_reason_is_taken_from_kafka_pythons_error_text() -> None:
    text = (
        "[Error 42] InvalidRequestError: Invalid value -5 for configuration message.max.bytes: Value must be at least 0"
    )
    assert _reason(text) == "Invalid value -5 for configuration message.max.bytes: Value must be at least 0"
    assert _reason("something else") == "something else"


def test_a_change_counts_as_applied_once_the_broker_shows_it_in_its_layer() -> None:
    under = [{"name": "x", "value": "16000", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}]
    own = {"x": parse_entry("x", raw("17000", "DYNAMIC_BROKER_CONFIG", synonyms=under))}
    assert applied(own, {"x": "17000"}, [], default=False)
    assert applied(own, {"x": "16000"}, [], default=True)  # under the broker's own value
    assert not applied(own, {"x": "15000"}, [], default=True)
    assert not applied(own, {}, ["x"], default=False)
    plain = {"x": parse_entry("x", raw("15000"))}
    assert applied(plain, {}, ["x"], default=False)
    assert applied(plain, {}, ["x"], default=True)
    assert not applied(plain, {"x": "15000"}, [], default=False)
