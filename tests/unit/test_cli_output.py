"""What ``kazami`` prints, without a cluster: sizes and numbers for people, aligned tables, a record on one line
and as JSON (lossless), and exit codes by kind of error."""

from __future__ import annotations

import io
import json

import pytest

from broker.errors import ClusterUnavailable, InvalidInput, KafkaRefused, KazamiError, NotSupported, TopicNotFound
from broker.messages.log import Message
from broker.messages.query_terms import QueryError
from console.cli import output
from console.cli.commands import exit_code, main


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "-"), (0, "0 B"), (1023, "1,023 B"), (1024, "1 KiB"), (1536, "1.50 KiB"), (104_857_600, "100 MiB")],
)
def test_sizes_for_people(value: int | None, shown: str) -> None:
    assert output.size(value) == shown


def test_numbers_and_times() -> None:
    assert output.number(9_223_372_036_854_775_807) == "9,223,372,036,854,775,807"
    assert output.number(None) == "-"
    assert output.when(1_700_000_000_123) == "2023-11-14 22:13:20.123Z"
    assert output.when(-1) == "-"


def test_tables_align_numbers_right() -> None:
    out = io.StringIO()
    output.table(out, ("TOPIC", "MESSAGES"), [("orders", "1,000"), ("a", "7")], right=(False, True))
    assert out.getvalue().splitlines() == ["TOPIC   MESSAGES", "orders     1,000", "a              7"]


def test_a_record_on_one_line_and_as_json() -> None:
    value = b'{"n": 1,\n "note": "two lines"}'
    m = Message("t", 2, 41, 1_700_000_000_000, "CreateTime", None, value, [("h", b"\xff")], transaction="aborted")
    line = output.record_line(m)
    assert line.startswith("2:41  2023-11-14 22:13:20.000Z  (no key)  ")
    assert "\n" not in line
    assert line.endswith("[aborted]")
    found = output.record_json(m)
    assert found["value"] == {"encoding": "utf-8", "data": value.decode()}
    assert (found["key"], found["key_kind"], found["value_kind"]) == ({"encoding": None, "data": None}, "null", "json")
    assert found["headers"] == [{"name": "h", "value": {"encoding": "base64", "data": "/w=="}}]
    json.dumps(found)  # a script can read it
    marker = Message("t", 0, 9, 1, "CreateTime", None, None, [], control="commit")
    assert output.record_line(marker).endswith("[commit marker]")


def test_a_long_value_is_cut_on_its_line() -> None:
    m = Message("t", 0, 0, 0, "CreateTime", b"k", b"x" * 5000, [])
    assert len(output.record_line(m)) < output.LINE_LIMIT * 2 + 60


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidInput("x"), 2),
        (QueryError("x", 0), 2),
        (TopicNotFound("x"), 3),
        (ClusterUnavailable("x"), 4),
        (KafkaRefused("x"), 5),
        (NotSupported("x"), 5),
        (KazamiError("x"), 1),
    ],
)
def test_exit_codes_by_kind(error: KazamiError, code: int) -> None:
    assert exit_code(error) == code


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["get", "orders"])
    assert ended.value.code == 2
    assert "usage: kazami get" in capsys.readouterr().err
