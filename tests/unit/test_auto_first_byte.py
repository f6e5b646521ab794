"""A key or value whose first byte is 0 (the schema registry's wire format starts so) is never JSON or text to
auto_data, whatever follows: the message list sends such bytes straight to the registry's decoder."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.decode import auto_data


@given(st.binary(max_size=64))
def test_bytes_starting_with_zero_are_binary(rest: bytes) -> None:
    assert auto_data(b"\x00" + rest)[0] == "binary"


def test_even_when_what_follows_is_json_or_text() -> None:
    for rest in (b'{"a": 1}', b"plain text", b"", b"\x00\x00\x00\x01\x02hello"):
        assert auto_data(b"\x00" + rest)[0] == "binary"
