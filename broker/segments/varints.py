"""Kafka's variable-length integers, as v2 records use them for every length, delta and count: unsigned
base-128 varints and the zigzag-encoded signed varints (int) and varlongs (long) built on them.

Read from a buffer at a position (returning the value and the position after it) and written, as Kafka's
``ByteUtils`` reads and writes them; an encoding longer than Kafka accepts (5 bytes for an int, 10 for a
long) raises ``ValueError``, which the record decoder turns into a finding.
"""

from __future__ import annotations


def read_unsigned_varint(buf: bytes | bytearray | memoryview, pos: int, max_length: int = 5) -> tuple[int, int]:
    """The unsigned base-128 number at ``buf[pos]`` (low 7 bits first) and the position after it.

    Raises ``ValueError`` when it runs past the end of ``buf`` or is longer than ``max_length`` bytes (5 for
    an int, 10 for a long: Kafka rejects longer encodings as corrupt).
    """
    value = shift = 0
    end = len(buf)
    for i in range(max_length):
        if pos + i >= end:
            raise ValueError(f"varint at byte {pos} runs past the end of the data")
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError(f"varint at byte {pos} is longer than {max_length} bytes")


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag-encoded int (at most 5 bytes, 32 bits) at ``buf[pos]`` and the position after it."""
    u, pos = read_unsigned_varint(buf, pos, 5)
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag-encoded long (at most 10 bytes, 64 bits) at ``buf[pos]`` and the position after it."""
    u, pos = read_unsigned_varint(buf, pos, 10)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def encode_varint(value: int) -> bytes:
    """Kafka's zigzag varint encoding of a 64-bit signed ``value`` (the inverse of ``read_varlong``; for
    values that fit 32 bits also of ``read_varint``)."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)
