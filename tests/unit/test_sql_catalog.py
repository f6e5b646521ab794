"""The SQL editor's field list: analytics.sql.infer_schema's DDL flattened to dotted paths with their types."""

from __future__ import annotations

import json

from analytics.sql import infer_schema
from analytics.sql_catalog import Field, flatten


def test_nested_fields_arrays_and_quoted_names_flatten_to_paths() -> None:
    docs = [
        {"id": 1, "user": {"name": "a", "geo": {"lat": 1.5}}, "tags": ["x"], "odd name": True, "tick`s": None},
        {"id": 2.5, "user": {"name": "b", "geo": {"lat": 2}}, "tags": [], "tick`s": "t"},
    ]
    ddl = infer_schema(json.dumps(d).encode() for d in docs)
    assert ddl is not None
    assert flatten(ddl) == [
        Field("id", "double"),
        Field("user", "struct"),
        Field("user.name", "string"),
        Field("user.geo", "struct"),
        Field("user.geo.lat", "double"),
        Field("tags", "array<string>"),
        Field("odd name", "boolean"),
        Field("tick`s", "string"),
    ]


def test_arrays_of_structs_stay_one_field() -> None:
    ddl = infer_schema([b'{"items": [{"SKU": "a", "n": 1}]}', b"not json", b"[1]"])
    assert ddl is not None
    assert flatten(ddl) == [Field("items", "array<struct<`SKU`: string, `n`: bigint>>")]
