"""The masking rules: the JSON path subset, patterns, parts, roles, and the settings that hold them."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import fastavro
import pytest

from broker.decode import decode, parse_avro_schema
from broker.errors import ConfigError
from broker.messages.log import Message
from broker.messages.masking import (
    DEFAULT_REPLACEMENT as R,
)
from broker.messages.masking import (
    Masker,
    MaskRule,
    apply_path,
    avro_reader,
    load_rules,
    mask_bytes,
    mask_record,
    masked_labels,
    parse_path,
    parse_rules,
    rules_for,
)

DOC = {
    "user": {"email": "ann@example.com", "name": "Ann", "tags": ["a", "b"]},
    "items": [{"card": "4111", "qty": 1}, {"card": {"card": "5500"}, "qty": 2}],
    "odd key": {"x y": 1},
    "n": 42,
}


def masked(path: str, doc: object = DOC) -> tuple[object, list[str]]:
    return apply_path(doc, parse_path(path))


def test_a_member_path_replaces_that_node_and_names_it() -> None:
    new, found = masked("$.user.email")
    assert new["user"] == {"email": R, "name": "Ann", "tags": ["a", "b"]}  # type: ignore[index]
    assert found == ["$.user.email"]
    assert DOC["user"]["email"] == "ann@example.com"  # type: ignore[index]  # the input is not changed


def test_wildcards_indexes_and_brackets() -> None:
    assert masked("$.items[*].qty")[1] == ["$.items[0].qty", "$.items[1].qty"]
    assert masked("$.items[-1].qty")[1] == ["$.items[1].qty"]
    assert masked("$.items[5].qty")[1] == []
    assert masked("$.user.*")[1] == ["$.user.email", "$.user.name", "$.user.tags"]
    assert masked("$['odd key'][\"x y\"]")[1] == ['$["odd key"]["x y"]']
    assert masked("$")[0] == R


def test_recursive_descent_finds_a_name_at_every_depth_once() -> None:
    new, found = masked("$..card")
    assert found == ["$.items[0].card", "$.items[1].card"]  # the outer one hides the inner one
    assert new["items"][1]["card"] == R  # type: ignore[index]
    assert masked("$..qty")[1] == ["$.items[0].qty", "$.items[1].qty"]
    nested = {"a": [[{"s": 1}], [{"s": 2, "t": {"s": 3}}]]}
    assert masked("$..s", nested)[1] == ["$.a[0][0].s", "$.a[1][0].s", "$.a[1][0].t.s"]
    assert masked("$.a[*][*].s", nested)[1] == ["$.a[0][0].s", "$.a[1][0].s"]


def test_a_path_into_a_scalar_or_a_missing_member_masks_nothing() -> None:
    assert masked("$.n.x")[1] == []
    assert masked("$.nobody")[1] == []
    assert masked("$.user.email", ["not", "an", "object"])[1] == []


@pytest.mark.parametrize("bad", ["user.email", "$.", "$.user..", "$[", "$[abc]", "$.a b", "$..", "$.a[1"])
def test_bad_paths_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        parse_path(bad)


def test_a_json_value_is_masked_and_written_again_as_json() -> None:
    rule = MaskRule(name="email", paths=("$.user.email",))
    raw = json.dumps(DOC).encode()
    new, labels = mask_bytes(raw, [rule])
    assert new is not None
    assert json.loads(new)["user"]["email"] == R
    assert b"ann@example.com" not in new
    assert labels == ["$.user.email"]
    untouched = b'{"user":   {"name": "Bo"}}'
    assert mask_bytes(untouched, [rule]) == (untouched, [])  # bytes kept exactly when nothing is masked


def test_a_pattern_masks_strings_and_numbers_inside_json_but_not_member_names() -> None:
    rule = MaskRule(name="cards", regex=r"\d{4}-?\d{4}")
    raw = b'{"card 1234-5678": "pay 1234-5678 now", "n": 12345678, "ok": true, "small": 12}'
    new, labels = mask_bytes(raw, [rule])
    assert json.loads(new or b"") == {"card 1234-5678": f"pay {R} now", "n": R, "ok": True, "small": 12}
    assert labels == ["~ cards"]


def test_a_pattern_masks_text_and_bytes_that_are_not_utf8() -> None:
    rule = MaskRule(name="secret", regex="(?i)hunter2")
    assert mask_bytes(b"password HUNTER2 and hunter2", [rule]) == (f"password {R} and {R}".encode(), ["~ secret"])
    binary = b"\xff\x00hunter2\xfe"
    assert mask_bytes(binary, [rule]) == (b"\xff\x00" + R.encode() + b"\xfe", ["~ secret"])
    assert mask_bytes(b"\xff\x00nothing", [rule]) == (b"\xff\x00nothing", [])


def test_paths_do_not_apply_to_text_and_null_or_empty_values_stay() -> None:
    rule = MaskRule(name="p", paths=("$.a",))
    assert mask_bytes(b"a plain text", [rule]) == (b"a plain text", [])
    assert mask_bytes(None, [rule]) == (None, [])
    assert mask_bytes(b"", [rule]) == (b"", [])


def test_a_record_is_masked_in_the_parts_each_rule_names() -> None:
    rules = [
        MaskRule(name="ids", parts=("key",), paths=("$.id",)),
        MaskRule(name="tokens", parts=("headers", "value"), regex="tok-[0-9]+"),
    ]
    result = mask_record(b'{"id": 7}', b"uses tok-123", [("auth", b"tok-9"), ("trace", b"abc")], rules)
    assert result.key == json.dumps({"id": R}, ensure_ascii=False).encode()
    assert result.value == f"uses {R}".encode()
    assert result.headers == [("auth", R.encode()), ("trace", b"abc")]
    assert result.labels == ("key $.id", "~ tokens", "header auth ~ tokens")


def test_roles_below_the_level_are_masked_and_topics_match_by_glob() -> None:
    admin_only = MaskRule(name="a", topics="orders.*", paths=("$.x",))
    operators_see = MaskRule(name="b", topics="orders.*", cluster="prod", paths=("$.y",), level="operator")
    rules = [admin_only, operators_see]
    assert rules_for(rules, "prod", "orders.eu", "viewer") == (admin_only, operators_see)
    assert rules_for(rules, "prod", "orders.eu", "operator") == (admin_only,)
    assert rules_for(rules, "prod", "orders.eu", "admin") == ()
    assert rules_for(rules, "local", "orders.eu", "viewer") == (admin_only,)
    assert rules_for(rules, "prod", "payments", "viewer") == ()
    assert rules_for(rules, "prod", "orders.eu", None) == (admin_only, operators_see)


def test_a_masker_gives_a_masked_message_that_says_what_it_hid() -> None:
    message = Message("t", 0, 5, 1, "CreateTime", b"k", b'{"user": {"email": "e@x"}}', [])
    masker = Masker((MaskRule(name="e", paths=("$.user.email",)),))
    shown = masker.message(message)
    assert masked_labels(shown) == ("$.user.email",)
    assert shown.offset == 5
    assert shown.key == b"k"
    assert b"e@x" not in (shown.value or b"")
    assert masker.message(Message("t", 0, 6, 1, "CreateTime", None, b'{"other": 1}', [])).value == b'{"other": 1}'
    assert Masker().message(message) is message


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ('[{"paths": ["$.a."]}]', "JSON path '$.a.'"),
        ('[{"regex": "("}]', "does not compile"),
        ('[{"regex": "x*"}]', "matches empty text"),
        ('[{"paths": ["$.a"], "regex": "x"}]', "either paths"),
        ("[{}]", "either paths"),
        ('[{"paths": ["$.a"], "level": "viewer"}]', "level must be operator or admin"),
        ('[{"paths": ["$.a"], "parts": ["body"]}]', "parts must be"),
        ('[{"paths": ["$.a"], "colour": "red"}]', "unknown key 'colour'"),
        ('[{"paths": ["$.a"], "replacement": ""}]', "replacement"),
        ("{not json", "not valid JSON"),
        ('"a string"', "expected a list"),
    ],
)
def test_bad_rules_are_a_settings_error_naming_the_rule(rules: str, message: str) -> None:
    with pytest.raises(ConfigError, match="KAZAMI_MASKING") as caught:
        parse_rules(rules)
    assert message in str(caught.value)


def test_rules_come_from_the_environment_and_the_clusters_file(tmp_path: Path) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        """
[clusters.prod]
bootstrap_servers = "kafka:9092"

[[clusters.prod.masking]]
name = "cards"
topics = "payments.*"
regex = '\\d{16}'

[[masking]]
paths = ["$..password"]
"""
    )
    rules = load_rules('[{"name": "emails", "cluster": "local", "paths": ["$.email"]}]', str(file), "local")
    assert [(r.name, r.cluster, r.topics) for r in rules] == [
        ("emails", "local", "*"),
        ("file rule 1", None, "*"),
        ("cards", "prod", "payments.*"),
    ]
    with pytest.raises(ConfigError, match="names cluster 'nowhere', which is not configured"):
        load_rules('[{"cluster": "nowhere", "paths": ["$.a"]}]', str(file), "local")
    with pytest.raises(ConfigError, match="two masking rules are named 'cards'"):
        load_rules('[{"name": "cards", "paths": ["$.a"]}]', str(file), "local")
    file.write_text(
        '[clusters.prod]\nbootstrap_servers = "k:1"\n[[clusters.prod.masking]]\ncluster = "x"\npaths = ["$.a"]\n'
    )
    with pytest.raises(ConfigError, match=r"\[clusters.prod\].*names cluster 'x'"):
        load_rules("", str(file), "local")


def test_avro_values_are_masked_as_the_document_the_pages_show() -> None:
    schema = parse_avro_schema(
        json.dumps(
            {
                "type": "record",
                "name": "User",
                "fields": [{"name": "email", "type": "string"}, {"name": "n", "type": "long"}],
            }
        )
    )
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema.parsed, {"email": "e@x.org", "n": 3})
    framed = b"\x00" + struct.pack(">I", 7) + out.getvalue()
    assert decode(framed, "auto", schema).kind == "avro"
    rule = MaskRule(name="e", paths=("$.email",))
    new, labels = mask_bytes(framed, [rule], reader=avro_reader(schema))
    assert labels == ["$.email"]
    assert json.loads(new or b"") == {"email": R, "n": 3}
    assert mask_bytes(framed, [MaskRule(name="other", paths=("$.nobody",))], reader=avro_reader(schema)) == (
        framed,
        [],
    )
    assert mask_bytes(framed, [rule]) == (framed, [])  # without the schema, a path cannot reach into Avro
    assert mask_bytes(b"\xff\xfe not avro", [rule], reader=avro_reader(schema)) == (b"\xff\xfe not avro", [])
