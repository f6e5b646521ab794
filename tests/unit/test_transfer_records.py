"""Records as files (broker.transfer.records) and where dead letters came from (broker.transfer.dead_letters)."""

from __future__ import annotations

import csv
import io
import json
import struct
from datetime import UTC, datetime

import pytest

from broker.errors import InvalidInput
from broker.transfer import dead_letters
from broker.transfer.records import Record, csv_header, csv_row, parse, to_json_line

RECORDS = [
    Record(b"k1", b'{"a":1}', (("h", b"x"), ("h", b"y")), 0, 10, 1_700_000_000_000, "create"),
    Record(None, None, (), 1, 11, 1_700_000_000_001, "create"),  # a tombstone with a null key
    Record(b"\xff\x00bin", b"\x80\x81", (("bin", b"\xfe"), ("none", None)), 2, 12, 5, "log_append"),
    Record(b"", b"", (), 0, 13, 6, "create"),  # empty, not null
    Record("ключ".encode(), "значение ✓".encode(), (), 0, 14, 7, "create"),
]


def test_json_lines_round_trip_every_byte_nulls_and_repeated_headers() -> None:
    text = "\n".join(to_json_line(r, "orders") for r in RECORDS) + "\n"
    parsed = parse(text.encode(), "jsonl")
    assert parsed.bad == []
    for before, after in zip(RECORDS, parsed.records, strict=True):
        assert (after.key, after.value, after.headers) == (before.key, before.value, before.headers)
        assert (after.partition, after.timestamp, after.offset) == (before.partition, before.timestamp, None)
    first = json.loads(text.split("\n")[0])
    assert (first["key"], first["key_encoding"], first["value"]) == ("k1", "text", '{"a":1}')
    third = json.loads(text.split("\n")[2])
    assert third["value_encoding"] == "base64"


def test_bad_lines_are_refused_with_their_numbers_and_hand_written_lines_are_read() -> None:
    lines = [
        '{"value": "fine"}',
        "not json at all",
        "",
        '{"value": "x", "value_encoding": "base64"}',
        '{"value": {"doc": 1}, "key": 42, "headers": {"trace": "t1"}}',
        '{"value": "v", "partition": -1}',
        "[1, 2]",
    ]
    parsed = parse("\n".join(lines).encode(), "jsonl")
    assert [(b.line, b.reason.split(" (")[0]) for b in parsed.bad] == [
        (2, "not JSON"),
        (4, "value is not valid base64"),
        (6, "partition -1 is out of range"),
        (7, "a line must be a JSON object with at least a value"),
    ]
    assert [r.value for r in parsed.records] == [b"fine", b'{"doc":1}']
    assert parsed.records[1].key == b"42"
    assert parsed.records[1].headers == (("trace", b"t1"),)


def test_csv_export_reads_back_and_a_column_map_picks_key_value_and_headers() -> None:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(csv_header())
    for r in RECORDS:
        writer.writerow(csv_row(r))
    back = parse(out.getvalue().encode(), "csv")
    assert back.bad == []
    for before, after in zip(RECORDS, back.records, strict=True):
        # An empty cell is a null in CSV: an empty key or value comes back null (JSON Lines keep them apart).
        assert after.key == (before.key or None)
        assert after.value == (before.value or None)
        assert after.headers == before.headers
    mapped = parse(
        b"id,body,trace,when\nu1,hello,t-1,1700000000000\nu2,bye,,notanumber\n",
        "csv",
        {"key": "id", "value": "body", "header:trace": "trace", "timestamp": "when"},
    )
    assert [(r.key, r.value, r.headers, r.timestamp) for r in mapped.records] == [
        (b"u1", b"hello", (("trace", b"t-1"),), 1_700_000_000_000)
    ]
    assert [(b.line, b.reason) for b in mapped.bad] == [(3, "timestamp must be a whole number, not 'notanumber'")]
    with pytest.raises(InvalidInput, match="no column 'body'"):
        parse(b"a,b\n1,2\n", "csv", {"value": "body"})


def test_lines_and_files_that_cannot_be_read() -> None:
    assert [r.value for r in parse(b"one\r\ntwo\n\nthree", "lines").records] == [b"one", b"two", b"three"]
    with pytest.raises(InvalidInput, match="not UTF-8"):
        parse(b"\xff\xfe", "lines")
    with pytest.raises(InvalidInput, match="format must be"):
        parse(b"x", "xml")
    with pytest.raises(InvalidInput, match="more than 2 records"):
        parse(b"a\nb\nc\n", "lines", max_records=2)


def test_dead_letters_name_their_origin_by_connect_or_spring_headers() -> None:
    connect = [
        ("__connect.errors.topic", b"orders"),
        ("__connect.errors.partition", b"2"),
        ("__connect.errors.offset", b"1234"),
        ("__connect.errors.exception.message", b"Unrecognized token"),
    ]
    spring = [
        ("kafka_dlt-original-topic", b"payments"),
        ("kafka_dlt-original-partition", struct.pack(">i", 5)),
        ("kafka_dlt-original-offset", struct.pack(">q", 2**33)),
        ("kafka_dlt-exception-fqcn", b"java.lang.IllegalStateException"),
    ]
    assert dead_letters.origin_of(connect, dead_letters.CONNECT) == dead_letters.Origin(
        "orders", 2, 1234, "Unrecognized token"
    )
    assert dead_letters.origin_of(spring, dead_letters.SPRING) == dead_letters.Origin(
        "payments", 5, 2**33, "java.lang.IllegalStateException"
    )
    assert dead_letters.origin_of(spring, dead_letters.CONNECT) is None
    assert dead_letters.detect([connect, connect, spring, []]) == dead_letters.CONNECT
    assert dead_letters.detect([[("other", b"x")]]) is None

    by_hand = dead_letters.Scheme("chosen", "source-topic")
    letters = [
        (0, 10, connect),
        (0, 11, [*connect[:2], ("__connect.errors.offset", b"1200")]),
        (1, 3, [("__connect.errors.topic", b"orders"), ("__connect.errors.partition", b"0")]),
        (1, 4, [("nothing", b"")]),
    ]
    groups, unnamed = dead_letters.group_by_origin(letters, dead_letters.CONNECT)
    assert unnamed == 1
    assert [(g.topic, g.partition, g.count, g.offsets, g.first_offset, g.last_offset) for g in groups] == [
        ("orders", 2, 2, [(0, 10), (0, 11)], 1200, 1234),
        ("orders", 0, 1, [(1, 3)], None, None),
    ]
    assert groups[0].errors == {"Unrecognized token": 1}
    assert dead_letters.origin_of([("source-topic", b"raw")], by_hand) == dead_letters.Origin("raw", None, None, None)


def test_a_copy_request_is_checked_field_by_field() -> None:
    from broker.transfer.copy import Bound, check_copy_request

    asked = check_copy_request(
        {
            "to_topic": " copy ",
            "partitions": [2, 0, 2],
            "from": {"offsets": {"0": 5, "2": 7}},
            "to": "2026-11-01T12:00:00Z",
            "keep_partition": False,
            "rate": 500,
        }
    )
    assert (asked.to_topic, asked.partitions, asked.keep_partition, asked.rate) == ("copy", [0, 2], False, 500.0)
    assert asked.start == Bound(offsets={0: 5, 2: 7})
    noon = datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert asked.stop == Bound(timestamp_ms=int(noon.timestamp() * 1000))
    assert (asked.exactly_once, asked.keep_timestamp, asked.dry_run) == (True, True, False)
    assert check_copy_request({"to_topic": "t", "from": 12}).start == Bound(offset=12)
    assert check_copy_request({"to_topic": "t", "from": "beginning", "to": "end"}).stop == Bound()
    for body, words in (
        ([], "JSON object"),
        ({}, "to_topic is required"),
        ({"to_topic": "t", "partitions": [-1]}, "partitions"),
        ({"to_topic": "t", "partitions": [True]}, "partitions"),
        ({"to_topic": "t", "from": {"offset": -3}}, "from"),
        ({"to_topic": "t", "from": {"offsets": {"x": 1}}}, "from.offsets"),
        ({"to_topic": "t", "to": {"timestamp": "yesterday-ish"}}, "to.timestamp"),
        ({"to_topic": "t", "rate": 0}, "rate"),
        ({"to_topic": "t", "rate": float("nan")}, "rate"),
        ({"to_topic": "t", "keep_partition": "yes"}, "keep_partition"),
        ({"to_topic": "t", "filter": 5}, "filter"),
    ):
        with pytest.raises(InvalidInput, match=words):
            check_copy_request(body)
