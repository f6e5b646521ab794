from __future__ import annotations

import base64
import datetime
import io
import json
import os
import struct
import time
import uuid
from decimal import Decimal

import fastavro
import pytest

from broker.decode import (
    DECODINGS,
    AvroSchema,
    InputError,
    SchemaError,
    decode,
    encode_input,
    hex_dump,
    parse_avro_schema,
    wire_value,
)

ORDER_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "customer", "type": "string"},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        ],
    }
)
ORDER = {"id": 42, "customer": "Zoë", "tags": ["a", "b"], "note": None, "status": "PAID"}


def avro_bytes(schema: AvroSchema, value: object) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema.parsed, value)
    return buffer.getvalue()


def confluent(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body


# --- null, empty, auto ------------------------------------------------------------------------------------


@pytest.mark.parametrize("decoding", DECODINGS)
def test_it_tells_a_tombstone_from_an_empty_value(decoding: str) -> None:
    tombstone = decode(None, decoding)
    empty = decode(b"", decoding)
    assert (tombstone.kind, tombstone.size, tombstone.text, tombstone.data, tombstone.error) == (
        "null",
        0,
        "",
        None,
        None,
    )
    assert (empty.kind, empty.size, empty.text, empty.data, empty.error) == ("empty", 0, "", None, None)
    assert tombstone.decoding == empty.decoding == decoding


def test_it_pretty_prints_a_json_object_in_auto_mode_keeping_non_ascii() -> None:
    raw = b'  {"name": "Zo\xc3\xab", "n": [1, 2]}\n'
    result = decode(raw)
    assert (result.kind, result.decoding, result.error) == ("json", "json", None)
    assert result.data == {"name": "Zoë", "n": [1, 2]}
    assert result.text == '{\n  "name": "Zoë",\n  "n": [\n    1,\n    2\n  ]\n}'
    assert (result.size, result.truncated, result.full_length) == (len(raw), False, len(result.text))


def test_it_pretty_prints_a_json_array_in_auto_mode() -> None:
    result = decode(b"[]")
    assert (result.kind, result.text, result.data) == ("json", "[]", [])


@pytest.mark.parametrize(
    ("raw", "data", "shown"),
    [
        (b"42", 42, "42"),
        (b' "x" ', "x", '"x"'),
        (b"true", True, "true"),
        (b"null", None, "null"),
        (b"-1.5e3", -1500.0, "-1500.0"),
        ('\ufeff{"a": 1}'.encode(), {"a": 1}, '{\n  "a": 1\n}'),
        ("\ufeff[2]".encode(), [2], "[\n  2\n]"),
    ],
)
def test_it_shows_json_scalars_and_json_after_a_byte_order_mark_as_json_in_auto_mode(
    raw: bytes, data: object, shown: str
) -> None:
    result = decode(raw)
    assert (result.kind, result.decoding, result.error) == ("json", "json", None)
    assert (result.data, result.text) == (data, shown)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2", b"NaN", b"1e999", b"-", b"nullish", b"42 apples"])
def test_it_shows_broken_json_and_what_only_looks_like_it_as_text_in_auto_mode(raw: bytes) -> None:
    result = decode(raw)
    assert (result.kind, result.decoding, result.error) == ("text", "text", None)
    assert result.text == result.data == raw.decode()


def test_it_reads_json_after_a_byte_order_mark_when_asked_for_json() -> None:
    assert decode('\ufeff{"a": 1}'.encode(), "json").data == {"a": 1}


def test_it_shows_printable_unicode_as_text_in_auto_mode() -> None:
    text = "café ✓ 日本語 😀\tline\r\nnext"
    result = decode(text.encode())
    assert (result.kind, result.decoding, result.text, result.data) == ("text", "text", text, text)


@pytest.mark.parametrize("raw", [b"\x00\x01\x02\xff", b"abc\x00def", "a\u0085b".encode(), b"\xc3\x28"])
def test_it_shows_binary_and_utf8_with_control_characters_as_a_hex_dump_in_auto_mode(raw: bytes) -> None:
    result = decode(raw)
    assert (result.kind, result.decoding, result.data, result.error) == ("binary", "hex", None, None)
    assert result.text == hex_dump(raw)


def test_it_refuses_an_unknown_decoding_name_and_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="unknown decoding 'utf8'"):
        decode(b"x", "utf8")
    with pytest.raises(ValueError, match="limit"):
        decode(b"x", limit=-1)


# --- explicit decodings -----------------------------------------------------------------------------------


def test_it_decodes_text_even_with_control_characters() -> None:
    result = decode(b"a\x00b", "text")
    assert (result.kind, result.decoding, result.data, result.text) == ("text", "text", "a\x00b", "a\\x00b")


def test_it_names_the_byte_offset_of_invalid_utf8_and_falls_back_to_hex() -> None:
    raw = b"ok \xff!"
    result = decode(raw, "text")
    assert result.error == "not valid UTF-8 at byte 3"
    assert (result.kind, result.decoding, result.data, result.text) == ("binary", "hex", None, hex_dump(raw))


@pytest.mark.parametrize(("raw", "data", "text"), [(b"42", 42, "42"), (b' "x" ', "x", '"x"'), (b"null", None, "null")])
def test_it_parses_any_json_value_in_json_mode(raw: bytes, data: object, text: str) -> None:
    result = decode(raw, "json")
    assert (result.kind, result.decoding, result.data, result.text, result.error) == ("json", "json", data, text, None)


def test_it_explains_why_json_fails_and_falls_back_to_hex() -> None:
    raw = b'{"a": }'
    result = decode(raw, "json")
    assert result.error == "not valid JSON: Expecting value at line 1 column 7"
    assert (result.kind, result.decoding, result.text, result.data) == ("binary", "hex", hex_dump(raw), None)
    assert decode(b"", "json").kind == "empty"
    assert decode(b"\xff", "json").error == "not valid UTF-8 at byte 0"


def test_it_dumps_even_text_in_hex_mode() -> None:
    result = decode(b"hello", "hex")
    assert (result.kind, result.decoding, result.error, result.data) == ("binary", "hex", None, None)
    assert result.text == "00000000  68 65 6c 6c 6f" + " " * 34 + "  |hello|"


# --- hostile content --------------------------------------------------------------------------------------


def test_it_keeps_hostile_text_in_data_but_makes_controls_and_bidi_overrides_visible() -> None:
    hostile = "<script>alert(1)</script> \u202eevil\u2066 nul\x00 esc\x1b[31m del\x7f c1\x85 tab\tok"
    result = decode(hostile.encode(), "text")
    assert result.data == hostile
    assert result.text == (
        "<script>alert(1)</script> \\u202eevil\\u2066 nul\\x00 esc\\x1b[31m del\\x7f c1\\x85 tab\tok"
    )
    assert not any(char in result.text for char in "\u202e\u2066\x00\x1b\x7f\x85")


def test_it_shows_text_with_a_right_to_left_override_as_text_in_auto_mode_with_the_override_visible() -> None:
    result = decode("invoice\u202efdp.exe".encode())
    assert (result.kind, result.data, result.text) == ("text", "invoice\u202efdp.exe", "invoice\\u202efdp.exe")


def test_it_escapes_bidi_controls_and_lone_surrogates_in_pretty_json_keeping_it_equivalent() -> None:
    raw = '{"<b>": "\u202egnp.exe", "s": "\\ud800", "del": "\\u007f", "nul": "\\u0000"}'.encode()
    result = decode(raw)
    assert result.kind == "json"
    assert result.data == {"<b>": "\u202egnp.exe", "s": "\ud800", "del": "\x7f", "nul": "\x00"}
    assert '"<b>": "\\u202egnp.exe"' in result.text
    assert '"s": "\\ud800"' in result.text
    assert '"del": "\\u007f"' in result.text
    assert '"nul": "\\u0000"' in result.text
    result.text.encode("utf-8")  # no lone surrogate left in what is shown
    assert json.loads(result.text) == result.data


# --- limits -----------------------------------------------------------------------------------------------


def test_it_cuts_a_10_mb_binary_value_by_bytes_without_building_the_whole_dump() -> None:
    raw = os.urandom(10_000_000)
    raw = b"\xff" + raw[1:]  # certainly not UTF-8
    started = time.perf_counter()
    result = decode(raw, limit=20_000)
    elapsed = time.perf_counter() - started
    assert (result.kind, result.size, result.truncated) == ("binary", 10_000_000, True)
    assert result.text == hex_dump(raw[:5_000])
    lines = 10_000_000 // 16
    assert result.full_length == lines * 78 + (lines - 1)
    assert elapsed < 1.0


def test_it_cuts_10_mb_of_text_to_the_limit() -> None:
    started = time.perf_counter()
    result = decode(b"a" * 10_000_000, limit=20_000)
    assert time.perf_counter() - started < 1.0
    assert (result.kind, result.text, result.truncated, result.full_length) == ("text", "a" * 20_000, True, 10_000_000)
    assert result.data == "a" * 10_000_000


def test_it_counts_escapes_in_the_full_length_of_cut_text() -> None:
    text = "\x00" * 8 + "\u202e" * 2 + "abc"
    result = decode(text.encode(), "text", limit=10)
    assert result.text == "\\x00\\x00\\x"
    assert (result.truncated, result.full_length) == (True, 8 * 4 + 2 * 6 + 3)
    untouched = decode(text.encode(), "text", limit=1000)
    assert (untouched.truncated, untouched.full_length) == (False, len(untouched.text))


def test_it_cuts_pretty_json_to_the_limit() -> None:
    result = decode(b'{"a": 1, "b": 2}', limit=10)
    full = '{\n  "a": 1,\n  "b": 2\n}'
    assert (result.kind, result.text, result.truncated, result.full_length) == ("json", full[:10], True, len(full))
    assert result.data == {"a": 1, "b": 2}


def test_it_cuts_a_small_hex_dump_to_a_quarter_of_the_limit_in_bytes() -> None:
    raw = bytes(range(40))
    result = decode(raw, "hex", limit=80)
    assert result.text == hex_dump(raw[:20])
    assert (result.truncated, result.full_length) == (True, len(hex_dump(raw)))


# --- hex_dump ---------------------------------------------------------------------------------------------


def test_it_writes_the_classic_hex_dump_layout_for_20_bytes() -> None:
    raw = b"Hello, Kafka!\x00\x01\x02\xff\x7f~ "
    assert len(raw) == 20
    assert hex_dump(raw).split("\n") == [
        "00000000  48 65 6c 6c 6f 2c 20 4b  61 66 6b 61 21 00 01 02  |Hello, Kafka!...|",
        "00000010  ff 7f 7e 20                                       |..~ |",
    ]


def test_it_starts_the_second_hex_group_after_eight_bytes() -> None:
    assert hex_dump(bytes(range(0x41, 0x4A))) == (
        "00000000  41 42 43 44 45 46 47 48  49                       |ABCDEFGHI|"
    )


def test_it_dumps_nothing_for_no_bytes_and_honours_width_and_limit() -> None:
    assert hex_dump(b"") == ""
    assert hex_dump(b"abcdef", width=4) == "00000000  61 62  63 64  |abcd|\n00000004  65 66         |ef|"
    assert hex_dump(b"abcdef", limit=2) == "00000000  61 62" + " " * 43 + "  |ab|"
    with pytest.raises(ValueError, match="width"):
        hex_dump(b"x", width=0)


# --- wire_value -------------------------------------------------------------------------------------------


def test_it_sends_utf8_as_text_and_anything_else_as_base64_on_the_wire() -> None:
    assert wire_value("Zoë <b>".encode()) == {"encoding": "utf-8", "data": "Zoë <b>"}
    assert wire_value(b"") == {"encoding": "utf-8", "data": ""}
    assert wire_value(b"\x00\xff") == {"encoding": "base64", "data": "AP8="}
    assert wire_value(None) == {"encoding": None, "data": None}


# --- encode_input -----------------------------------------------------------------------------------------


def test_it_encodes_text_input_as_utf8() -> None:
    assert encode_input("Zoë ✓\n", "text") == "Zoë ✓\n".encode()
    with pytest.raises(InputError, match="lone surrogate at character 2"):
        encode_input("a\ud800", "text")


def test_it_compacts_json_input_on_request_keeping_every_token_as_typed() -> None:
    typed = '{ "a b" : 1.50,\n  "e": 1e5, "s": "x \\" y\\u00e9", "n": [ 1 , null ],\t"z": "Zoë" }'
    compact = '{"a b":1.50,"e":1e5,"s":"x \\" y\\u00e9","n":[1,null],"z":"Zoë"}'
    assert encode_input(typed, "json-compact") == compact.encode()
    assert encode_input(" 42 ", "json-compact") == b"42"
    # Plain "json" validates and keeps the bytes as typed, whitespace and all.
    assert encode_input(typed, "json") == typed.encode()
    assert encode_input(" 42 ", "json") == b" 42 "


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ('{"a": 1,\n "b": }', "not valid JSON at line 2 column 7: Expecting value"),
        ("", "not valid JSON at line 1 column 1: Expecting value"),
        ("[1, 2] x", "not valid JSON at line 1 column 8: Extra data"),
        ("[NaN]", "NaN is not valid JSON"),
    ],
)
def test_it_refuses_invalid_json_input_naming_the_position(typed: str, message: str) -> None:
    for fmt in ("json", "json-compact"):
        with pytest.raises(InputError) as caught:
            encode_input(typed, fmt)
        assert str(caught.value) == message


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("deadBEEF", b"\xde\xad\xbe\xef"),
        ("0xdead beef", b"\xde\xad\xbe\xef"),
        (" de ad\n0Xbe  ef ", b"\xde\xad\xbe\xef"),
        ("0x00 0x01", b"\x00\x01"),
        ("", b""),
    ],
)
def test_it_encodes_hex_input_allowing_whitespace_and_0x_prefixes(typed: str, expected: bytes) -> None:
    assert encode_input(typed, "hex") == expected


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("de ag", "not a hex digit at character 5: 'g'"),
        ("0xzz", "not a hex digit at character 3: 'z'"),
        ("abc", "an odd number of hex digits (3): each byte needs two"),
        ("0x", "a 0x prefix with no hex digits at character 1"),
        ("12 ３４", "not a hex digit at character 4: '３'"),
    ],
)
def test_it_refuses_bad_hex_input_naming_the_character(typed: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        encode_input(typed, "hex")
    assert str(caught.value) == message


def test_it_decodes_base64_input_standard_or_url_safe_with_or_without_padding() -> None:
    payload = b"\x00\xfb\xff hello"
    assert encode_input(base64.b64encode(payload).decode(), "base64") == payload
    assert encode_input(base64.urlsafe_b64encode(payload).decode().rstrip("="), "base64") == payload
    assert encode_input("aGVs\nbG8=\n", "base64") == b"hello"


@pytest.mark.parametrize("typed", ["a", "ab$d", "YQ==YQ=="])
def test_it_refuses_invalid_base64_input(typed: str) -> None:
    with pytest.raises(InputError, match="not valid base64"):
        encode_input(typed, "base64")


def test_it_refuses_an_unknown_input_format() -> None:
    with pytest.raises(ValueError, match="unknown input format 'avro'"):
        encode_input("x", "avro")


# --- Avro -------------------------------------------------------------------------------------------------


def test_it_round_trips_an_avro_record() -> None:
    schema = parse_avro_schema(ORDER_SCHEMA)
    assert schema.source == ORDER_SCHEMA
    raw = avro_bytes(schema, ORDER)
    result = decode(raw, "avro", schema)
    assert (result.kind, result.decoding, result.error, result.size) == ("avro", "avro", None, len(raw))
    assert result.data == ORDER
    assert result.text == json.dumps(ORDER, indent=2, ensure_ascii=False)


def test_it_strips_the_confluent_header_in_avro_mode_and_recognises_it_in_auto_mode() -> None:
    schema = parse_avro_schema(ORDER_SCHEMA)
    raw = confluent(7, avro_bytes(schema, ORDER))
    for decoding in ("avro", "auto"):
        result = decode(raw, decoding, schema)
        assert (result.kind, result.decoding, result.data, result.error) == ("avro", "avro", ORDER, None)
    without_schema = decode(raw)
    assert (without_schema.kind, without_schema.error) == ("binary", None)


def test_it_reads_an_unframed_avro_body_that_starts_with_a_zero_byte() -> None:
    schema = parse_avro_schema('{"type": "record", "name": "P", "fields": [{"name": "n", "type": "long"}]}')
    raw = avro_bytes(schema, {"n": 0})
    assert raw == b"\x00"
    assert decode(raw, "avro", schema).data == {"n": 0}
    padded = parse_avro_schema(
        '{"type": "record", "name": "Q", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string"}]}'
    )
    raw = avro_bytes(padded, {"a": 0, "b": "abcd"})  # 00 08 61 62 63 64: looks framed, but is not
    assert decode(raw, "avro", padded).data == {"a": 0, "b": "abcd"}


def test_it_renders_avro_bytes_like_avro_json_and_logical_types_as_strings() -> None:
    schema = parse_avro_schema(
        json.dumps(
            {
                "type": "record",
                "name": "Payment",
                "fields": [
                    {"name": "raw", "type": "bytes"},
                    {"name": "digest", "type": {"type": "fixed", "name": "D2", "size": 2}},
                    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
                    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
                    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                    {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
                    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
                    {"name": "far", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                ],
            }
        )
    )
    value = {
        "raw": b'hi\x00\xff"\\',
        "digest": b"\x01\xab",
        "amount": Decimal("-1234.50"),
        "at": datetime.datetime(2024, 2, 29, 13, 14, 15, 678000, tzinfo=datetime.UTC),
        "at_us": datetime.datetime(2024, 2, 29, 13, 14, 15, 678901, tzinfo=datetime.UTC),
        "local": datetime.datetime(2024, 2, 29, 13, 14, 15),
        "day": datetime.date(2024, 2, 29),
        "clock": datetime.time(13, 14, 15, 16000),
        "id": uuid.UUID(int=1),
        "far": 2**62,  # beyond datetime: shown as the number, not an error
    }
    result = decode(avro_bytes(schema, value), "avro", schema)
    assert result.error is None
    assert result.data == {
        "raw": 'hi\x00ÿ"\\',
        "digest": "\x01«",
        "amount": "-1234.50",
        "at": "2024-02-29T13:14:15.678+00:00",
        "at_us": "2024-02-29T13:14:15.678901+00:00",
        "local": "2024-02-29T13:14:15.000",
        "day": "2024-02-29",
        "clock": "13:14:15.016",
        "id": "00000000-0000-0000-0000-000000000001",
        "far": 2**62,
    }
    assert '"raw": "hi\\u0000\\u00ff\\"\\\\"' in result.text
    assert '"digest": "\\u0001\\u00ab"' in result.text
    assert json.loads(result.text) == result.data
    assert json.dumps(result.data) == json.dumps(json.loads(result.text))


def test_it_leaves_fastavros_own_logical_type_readers_alone() -> None:
    schema = parse_avro_schema('{"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}')
    raw = avro_bytes(schema, Decimal("1.25"))
    assert decode(raw, "avro", schema).data == "1.25"
    assert fastavro.schemaless_reader(io.BytesIO(raw), schema.parsed, None) == Decimal("1.25")


def test_it_does_not_spend_minutes_on_a_huge_avro_decimal() -> None:
    schema = parse_avro_schema('{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}')
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, "bytes", b"\x7f" * 1_000_000)
    started = time.perf_counter()
    result = decode(buffer.getvalue(), "avro", schema, limit=100)
    assert time.perf_counter() - started < 1.0
    assert (result.kind, result.error, result.truncated) == ("avro", None, True)
    assert result.text.startswith('"\\u007f\\u007f')


def test_it_explains_why_a_value_does_not_match_the_schema_and_falls_back_to_hex() -> None:
    schema = parse_avro_schema(ORDER_SCHEMA)
    raw = avro_bytes(schema, ORDER)
    short = decode(raw[:-3], "avro", schema)
    assert short.error == "not valid Avro for the uploaded schema: the data ends before the value does"
    assert (short.kind, short.decoding, short.text) == ("binary", "hex", hex_dump(raw[:-3]))
    extra = decode(raw + b"!!", "avro", schema)
    assert extra.error == "not valid Avro for the uploaded schema: 2 bytes left over after the value"
    framed = decode(confluent(12, b"\x54\x02x"), "avro", schema)
    assert framed.error == (
        "not valid Avro for the uploaded schema: (Confluent schema id 12) the data ends before the value does"
    )
    bad_enum = decode(b"\x02\x02a\x00\x00\x08", "avro", schema)
    assert bad_enum.error == (
        "not valid Avro for the uploaded schema: a union branch or enum symbol index is out of range"
    )
    text = decode(b"\x02\x04\xff\xfe\x00\x00\x00", "avro", schema)
    assert text.error is not None
    assert text.error.startswith("not valid Avro for the uploaded schema: a string is not valid UTF-8")


def test_it_asks_for_a_schema_before_decoding_avro() -> None:
    result = decode(b"\x02", "avro")
    assert (result.kind, result.error, result.text) == (
        "binary",
        "no Avro schema uploaded for this topic",
        hex_dump(b"\x02"),
    )


def test_it_leaves_auto_mode_unharmed_when_framed_bytes_are_not_avro() -> None:
    schema = parse_avro_schema(ORDER_SCHEMA)
    result = decode(confluent(1, b"\xff\xff"), "auto", schema)
    assert (result.kind, result.decoding, result.error) == ("binary", "hex", None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"type": }', "not valid JSON at line 1 column 10: Expecting value"),
        ('{"type": "strin"}', 'unknown type "strin"'),
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "strin"}]}', 'unknown type "strin"'),
        ('{"type": "record", "fields": []}', '"name" is a required field'),
        ('{"type": "fixed", "name": "F"}', 'the attribute "size" is missing'),
        ("42", "an Avro schema is a JSON object, array or type name, not 42"),
        ("[]", "an empty union"),
        ('{"type": "array", "items": "null"}', "arrays of items that take no bytes"),
    ],
)
def test_it_explains_why_a_schema_is_refused(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_avro_schema(text)


def test_it_refuses_a_schema_over_1_mb() -> None:
    huge = json.dumps({"type": "string", "doc": "x" * 1_100_000})
    with pytest.raises(SchemaError, match="larger than 1 MB"):
        parse_avro_schema(huge)


def test_it_survives_deeply_nested_data_in_a_recursive_schema() -> None:
    schema = parse_avro_schema(
        '{"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}'
    )
    assert decode(b"\x02\x02\x00", "avro", schema).data == {"next": {"next": {"next": None}}}
    result = decode(b"\x02" * 1_000_000 + b"\x00", "avro", schema)
    assert (result.kind, result.error) == (
        "binary",
        "not valid Avro for the uploaded schema: the value is nested too deeply to show",
    )
