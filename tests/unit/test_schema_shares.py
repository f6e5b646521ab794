"""The share of each schema id among a page's records (console/present/schema_choices.py: schema_shares), as the
messages page draws it under its rows."""

from __future__ import annotations

from broker.decode import Decoded
from broker.messages.log import Message
from console.present.messages import ShownMessage
from console.present.schema_choices import schema_shares


def decoded(schema: dict[str, object] | None) -> Decoded:
    return Decoded("avro" if schema else "text", "auto", "x", None, None, 1, False, 1, schema)


def row(offset: int, value: dict[str, object] | None, control: str | None = None) -> ShownMessage:
    message = Message("t", 0, offset, 0, "CreateTime", None, b"x", [], control=control)
    return ShownMessage(message, decoded(None), decoded(value), [], "", cluster="local")


V1 = {"id": 5, "subject": "t-value", "version": 1, "type": "AVRO"}
V2 = {"id": 9, "subject": "t-value", "version": 2, "type": "AVRO"}
UNKNOWN = {"id": 77, "subject": None, "version": None, "type": None}


def test_each_schema_id_counted_most_common_first_with_its_subject_linked() -> None:
    rows = [row(0, V1), row(1, V2), row(2, V2), row(3, V2), row(4, None), row(5, UNKNOWN), row(6, None, "commit")]
    shares = schema_shares("local", rows)
    assert [(s.part, s.id, s.count, s.total, s.percent) for s in shares] == [
        ("value", 9, 3, 6, "50%"),
        ("value", 5, 1, 6, "17%"),
        ("value", None, 1, 6, "17%"),
        ("value", 77, 1, 6, "17%"),
    ]  # the commit marker is no record; keys name no id, so they are not listed
    assert shares[0].url == "/clusters/local/schemas/t-value/"
    assert (shares[0].subject, shares[0].version, shares[0].type_label) == ("t-value", 2, "Avro")
    assert shares[3].url == ""  # an id the registry does not know: no subject to link


def test_a_page_without_schema_ids_draws_nothing() -> None:
    assert schema_shares("local", [row(0, None), row(1, None)]) == []
    assert schema_shares("local", []) == []
