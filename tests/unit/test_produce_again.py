"""The produce form's first values (broker.messages.produce): formats guessed from recent records, and a record
as the form takes it to send again, with what masking hides left out."""

from __future__ import annotations

from broker.messages.log import Message
from broker.messages.produce import as_form, guess_formats


def record(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]] | None = None) -> Message:
    return Message("t", 3, 41, 1_700_000_000_000, "CreateTime", key, value, headers or [])


def test_formats_are_guessed_only_where_the_recent_records_agree() -> None:
    assert guess_formats([]) == {}
    assert guess_formats([record(None, b'{"a": 1}'), record(None, b" [1, 2] ")]) == {
        "value_format": "json",
        "key_format": "none",
    }
    assert guess_formats([record(b"k", b'{"a": 1}'), record(b"k2", b"plain words")]) == {}
    assert guess_formats([record(b'{"id": 1}', b"42")]) == {"key_format": "json"}  # a bare number is not JSON enough
    assert guess_formats([record(None, b"{not json")]) == {"key_format": "none"}


def test_a_record_fills_the_form_as_it_was_written() -> None:
    again = as_form(record(b"user-1", b'{"n": 1}', [("trace", b"t-1"), ("empty", b"")]))
    assert again.source == "3:41"
    assert again.fields == {
        "partition": "3",
        "key_format": "text",
        "key": "user-1",
        "value_format": "json",
        "value": '{"n": 1}',
        "header_format": "text",
        "headers": "trace=t-1\nempty=",
    }
    assert again.left_out == ()
    binary = as_form(record(None, b"\x00\x01\xff", [("bin", b"\xff")]))
    assert (binary.fields["key_format"], binary.fields["value_format"], binary.fields["value"]) == (
        "none",
        "base64",
        "AAH/",
    )
    assert binary.fields["headers"] == "bin=/w=="
    assert as_form(record(b"k", None)).fields["value_format"] == "null"


def test_what_masking_hides_is_not_filled_in() -> None:
    again = as_form(record(b"user-1", b'{"card": "4111"}', [("auth", b"token")]), ("$.card", "header auth ~ tokens"))
    assert again.left_out == ("value", "headers")
    assert "value" not in again.fields
    assert "headers" not in again.fields
    assert again.fields["key"] == "user-1"
    assert as_form(record(b"secret", b"v"), ("key ~ ids",)).left_out == ("key",)
