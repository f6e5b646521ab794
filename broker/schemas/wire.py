"""The Confluent wire format: a magic byte 0, the schema id as 4 bytes big-endian, then the encoded record;
for Protobuf, the message indexes come first (a zigzag varint count, then each index as a zigzag varint; the
common ``[0]`` is written as the single byte 0)."""

from __future__ import annotations

MAGIC = 0
HEADER = 5  # magic byte + 4-byte big-endian schema id
MAX_INDEXES = 100  # more message indexes than any schema nests messages: the bytes are not indexes


class WireError(ValueError):
    """Bytes that are not in the wire format where it was expected; the message says why."""


def is_framed(raw: bytes | None) -> bool:
    """Whether ``raw`` starts like a wire-format record (magic byte 0 and room for a schema id)."""
    return raw is not None and len(raw) >= HEADER and raw[0] == MAGIC


def split(raw: bytes) -> tuple[int, bytes]:
    """(schema id, the bytes after the 5-byte header). Raises WireError when ``raw`` is not framed."""
    if not is_framed(raw):
        raise WireError("the bytes do not start with the magic byte 0 and a 4-byte schema id")
    return int.from_bytes(raw[1:HEADER], "big"), bytes(raw[HEADER:])


def frame(schema_id: int, body: bytes) -> bytes:
    """``body`` behind the wire-format header for ``schema_id``."""
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big") + body


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise WireError("the message indexes end before their last varint does")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position  # zigzag
        shift += 7
        if shift > 63:
            raise WireError("a message index varint is longer than 10 bytes")


def read_indexes(body: bytes) -> tuple[list[int], bytes]:
    """The Protobuf message indexes at the start of ``body`` and the message bytes after them. A count of 0
    (the single byte 0) means ``[0]``, the first message of the file. Raises WireError for indexes that do
    not read (cut short, a negative count or index, more than MAX_INDEXES)."""
    count, position = _read_varint(body, 0)
    if count == 0:
        return [0], body[position:]
    if count < 0 or count > MAX_INDEXES:
        raise WireError(f"a message index count of {count} is not possible")
    indexes = []
    for _ in range(count):
        index, position = _read_varint(body, position)
        if index < 0:
            raise WireError(f"a negative message index ({index})")
        indexes.append(index)
    return indexes, body[position:]


def _write_varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def write_indexes(indexes: list[int]) -> bytes:
    """The wire form of ``indexes``: ``[0]`` as the single byte 0, otherwise the count then each index."""
    if indexes == [0]:
        return b"\x00"
    return _write_varint(len(indexes)) + b"".join(_write_varint(index) for index in indexes)
