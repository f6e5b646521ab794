"""A copy's schema ids rewritten for the target's registry (broker.transfer.schemas): registered once per id under
the target topic's subject, references first, the encoded record after the id untouched."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from broker.errors import InvalidInput
from broker.schemas.model import AVRO, PROTOBUF, RegisteredSchema, RegistryError, SchemaReference
from broker.schemas.wire import frame
from broker.transfer.schemas import SchemaMover

USER = '{"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"}]}'
COMMON = 'syntax = "proto3"; message Common { string id = 1; }'
EVENT = 'syntax = "proto3"; import "common.proto"; message Event { Common who = 1; }'


class Source:
    def __init__(self) -> None:
        self.by_id = {
            7: RegisteredSchema(7, AVRO, USER),
            9: RegisteredSchema(9, PROTOBUF, EVENT, (SchemaReference("common.proto", "common", 3),)),
        }
        self.asked: list[int] = []

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        self.asked.append(schema_id)
        if schema_id not in self.by_id:
            raise RegistryError(f"Schema {schema_id} not found", 404, 40403)
        return self.by_id[schema_id]

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        assert (subject, version) == ("common", 3)
        return RegisteredSchema(4, PROTOBUF, COMMON, subject="common", version=3)


class Target:
    """A registry whose ids start at 100."""

    def __init__(self) -> None:
        self.registered: list[tuple[str, str, tuple[SchemaReference, ...]]] = []

    def register(
        self, subject: str, text: str, schema_type: str = AVRO, references: Sequence[SchemaReference] = ()
    ) -> tuple[int, int | None]:
        self.registered.append((subject, schema_type, tuple(references)))
        return 100 + len(self.registered), 1


def test_framed_keys_and_values_get_the_targets_ids_and_keep_their_bytes() -> None:
    source, target = Source(), Target()
    mover = SchemaMover(source, target, "orders-copy")
    body = b"\x02\x0aabc"
    assert mover.move(frame(7, body), "value") == frame(101, body)
    assert mover.move(frame(7, body + b"x"), "value") == frame(101, body + b"x")  # the same id: registered once
    assert mover.move(frame(7, body), "key") == frame(102, body)  # a key's subject is its own
    assert target.registered[:2] == [("orders-copy-value", AVRO, ()), ("orders-copy-key", AVRO, ())]
    assert source.asked == [7, 7]
    assert mover.move(b'{"plain": 1}', "value") == b'{"plain": 1}'
    assert mover.move(None, "value") is None
    assert mover.registered == {("orders-copy-value", 101), ("orders-copy-key", 102)}


def test_a_schemas_references_are_registered_first_under_their_own_subjects() -> None:
    source, target = Source(), Target()
    mover = SchemaMover(source, target, "events-copy")
    indexes_and_message = b"\x00\x0a\x03abc"  # Protobuf: the message indexes stay as they are
    assert mover.move(frame(9, indexes_and_message), "value") == frame(102, indexes_and_message)
    assert target.registered == [
        ("common", PROTOBUF, ()),
        ("events-copy-value", PROTOBUF, (SchemaReference("common.proto", "common", 1),)),
    ]


def test_an_id_the_source_does_not_know_stops_the_copy_with_the_reason() -> None:
    mover = SchemaMover(Source(), Target(), "t")
    with pytest.raises(InvalidInput, match="schema id 55"):
        mover.move(frame(55, b"x"), "value")
