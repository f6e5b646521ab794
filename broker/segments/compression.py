"""Decompression of what Kafka's codecs wrote into a record batch (or a legacy wrapper message), with a
bound on the output.

Kafka compresses the records of a batch as one stream: gzip, snappy in xerial's framing, lz4 in the LZ4
frame format, or zstd. A segment file can be damaged or hostile, and a few kilobytes of compressed data
can claim gigabytes, so every codec here stops as soon as its output would pass ``max_bytes`` and raises
``CompressionError`` (a ``ValueError``) with a sentence saying what was wrong. Callers turn that into a
finding; nothing here ever writes a file.
"""

from __future__ import annotations

import struct
import zlib

import lz4.block  # type: ignore[import-untyped]
import snappy  # type: ignore[import-untyped]
import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

Buffer = bytes | bytearray | memoryview

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic, int32 version, int32 compatible version
_LZ4_MAGIC = 0x184D2204
_LZ4_MAGIC_BYTES = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LZ4_UNCOMPRESSED_BIT = 0x80000000
_LZ4_WINDOW = 64 * 1024  # how far back a linked block may refer
# A zstd block decodes to at most 128 KiB and takes at least 4 bytes of input, so feeding the decoder
# `room // 32 KiB` bytes at a time keeps each call's output near what is still allowed.
_ZSTD_MAX_BLOCK = 128 * 1024
_ZSTD_RATIO = _ZSTD_MAX_BLOCK // 4
_INT32 = struct.Struct(">i")
_UINT32_LE = struct.Struct("<I")


class CompressionError(ValueError):
    """Compressed data that cannot be read: corrupt, truncated, of an unknown codec, or decompressing to
    more than the caller allowed. The message says which, for a person."""


def codec_name(codec: int) -> str:
    """Kafka's lower-case name of a codec id (``"none"`` ... ``"zstd"``), or ``"unknown(N)"``."""
    return CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else f"unknown({codec})"


def decompress(codec: int, data: Buffer, max_bytes: int) -> bytes:
    """The bytes ``data`` decompresses to under ``codec`` (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).

    Raises ``CompressionError`` when the data is corrupt or truncated, when the codec is unknown, or as
    soon as the output would be longer than ``max_bytes``, before allocating much past that.
    """
    if codec == NONE:
        if len(data) > max_bytes:
            raise _too_big("uncompressed", max_bytes)
        return bytes(data)
    if codec == GZIP:
        return _gunzip(data, max_bytes)
    if codec == SNAPPY:
        return _unsnappy(data, max_bytes)
    if codec == LZ4:
        return _unlz4(data, max_bytes)
    if codec == ZSTD:
        return _unzstd(data, max_bytes)
    raise CompressionError(f"unknown compression codec {codec}: Kafka knows 0 to 4 (none, gzip, snappy, lz4, zstd)")


def _too_big(name: str, max_bytes: int) -> CompressionError:
    return CompressionError(f"{name} data decompresses to more than the {max_bytes} bytes allowed")


def _gunzip(data: Buffer, max_bytes: int) -> bytes:
    """gzip members back to back, as Java's GZIPInputStream reads them: bytes after the last member that
    do not start another one are ignored, as Java ignores them."""
    parts: list[bytes] = []
    total = 0
    rest: Buffer = data
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(rest, max_bytes - total + 1)
        except zlib.error as e:
            raise CompressionError(f"gzip data is corrupt: {e}") from e
        total += len(out)
        if total > max_bytes:
            raise _too_big("gzip", max_bytes)
        parts.append(out)
        if not inflater.eof:
            raise CompressionError("gzip data ends in the middle of its stream (truncated)")
        rest = inflater.unused_data
        if rest[:2] != b"\x1f\x8b":
            break
    return b"".join(parts)


def _unsnappy(data: Buffer, max_bytes: int) -> bytes:
    """xerial's framing (a 16-byte header, then int32 length + raw snappy block, again and again; the
    header may come back mid-stream where streams were concatenated), or, as Kafka accepts, one raw
    snappy block when the payload does not start with xerial's magic."""
    view = memoryview(data)
    if len(view) < _XERIAL_HEADER_SIZE or view[:8] != _XERIAL_MAGIC:
        return _snappy_block(view, max_bytes, max_bytes)
    parts: list[bytes] = []
    total = 0
    pos, end = _XERIAL_HEADER_SIZE, len(view)
    while pos < end:
        if view[pos : pos + 8] == _XERIAL_MAGIC:
            if pos + _XERIAL_HEADER_SIZE > end:
                raise CompressionError(f"snappy stream ends inside a repeated xerial header at byte {pos}")
            pos += _XERIAL_HEADER_SIZE
            continue
        if pos + 4 > end:
            raise CompressionError(f"snappy stream ends inside a block length at byte {pos} (truncated)")
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CompressionError(
                f"snappy block at byte {pos - 4} claims {length} bytes but {end - pos} remain (truncated or corrupt)"
            )
        block = _snappy_block(view[pos : pos + length], max_bytes - total, max_bytes)
        pos += length
        total += len(block)
        parts.append(block)
    return b"".join(parts)


def _snappy_block(block: memoryview, room: int, max_bytes: int) -> bytes:
    """One raw snappy block, whose uncompressed length is the varint it starts with: checked against the
    ``room`` left under ``max_bytes`` before anything is allocated."""
    size = shift = 0
    for i in range(5):
        if i >= len(block):
            raise CompressionError("snappy block ends inside its length preamble (truncated)")
        b = block[i]
        size |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    else:
        raise CompressionError("snappy block length preamble is longer than 5 bytes (corrupt)")
    if size > room:
        raise _too_big("snappy", max_bytes)
    try:
        out: bytes = snappy.uncompress(block)
    except snappy.UncompressError as e:
        raise CompressionError("snappy block is corrupt") from e
    if len(out) != size:
        raise CompressionError(f"snappy block gave {len(out)} bytes where its preamble says {size}")
    return out


def _unlz4(data: Buffer, max_bytes: int) -> bytes:
    """The LZ4 frame format, walked block by block.

    The header checksum byte is skipped unread: Kafka's magic-0 producers computed it over the wrong
    bytes, and Kafka ignores it, so python-lz4's frame decoder (which checks it) cannot be used. Block
    and content checksums (xxHash32) are skipped too. Linked blocks, which Kafka never writes, are read
    with the previous 64 KiB as their dictionary.
    """
    view = memoryview(data)
    end = len(view)
    pos = 0
    parts: list[bytes] = []
    total = 0
    while True:
        if end - pos < 7:
            raise CompressionError(f"lz4 frame header at byte {pos} is cut short (truncated)")
        (magic,) = _UINT32_LE.unpack_from(view, pos)
        if magic != _LZ4_MAGIC:
            raise CompressionError(f"lz4 frame at byte {pos} starts {magic:#010x}, expected the magic 0x184d2204")
        flg, bd = view[pos + 4], view[pos + 5]
        if flg >> 6 != 1:
            raise CompressionError(f"lz4 frame descriptor says version {flg >> 6}; only version 1 exists")
        block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
        if block_max is None:
            raise CompressionError(f"lz4 frame descriptor byte BD {bd:#04x} names no block size (expects 4 to 7)")
        linked = not flg & 0x20
        block_checksum = 4 if flg & 0x10 else 0
        pos += 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1  # content size, dict id, HC
        window = b""
        while True:
            if pos + 4 > end:
                raise CompressionError("lz4 frame ends before its end mark (truncated)")
            (word,) = _UINT32_LE.unpack_from(view, pos)
            pos += 4
            if word == 0:
                break
            size = word & ~_LZ4_UNCOMPRESSED_BIT
            if size > block_max:
                raise CompressionError(f"lz4 block at byte {pos - 4} is {size} bytes, past the frame's {block_max}")
            if pos + size + block_checksum > end:
                raise CompressionError(f"lz4 block at byte {pos - 4} runs past the end of the data (truncated)")
            block = view[pos : pos + size]
            pos += size + block_checksum
            if word & _LZ4_UNCOMPRESSED_BIT:
                out = bytes(block)
            else:
                try:
                    if linked and window:
                        out = lz4.block.decompress(block, uncompressed_size=block_max, dict=window)
                    else:
                        out = lz4.block.decompress(block, uncompressed_size=block_max)
                except lz4.block.LZ4BlockError as e:
                    raise CompressionError(f"lz4 block at byte {pos - size - 4} is corrupt") from e
            total += len(out)
            if total > max_bytes:
                raise _too_big("lz4", max_bytes)
            parts.append(out)
            if linked:
                window = (window + out)[-_LZ4_WINDOW:]
        if flg & 0x04:
            pos += 4  # content checksum
        # Kafka reads one frame; a second is read too, anything else after the end mark is ignored as Kafka does.
        if view[pos : pos + 4] != _LZ4_MAGIC_BYTES:
            return b"".join(parts)


_ZSTD = zstandard.ZstdDecompressor()


def _unzstd(data: Buffer, max_bytes: int) -> bytes:
    """zstd frames back to back (Kafka's producers write them without a content size). The input is fed
    to the decoder in pieces small enough that no single call can overshoot ``max_bytes`` by more than
    one block, since ``decompressobj`` has no output limit of its own."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    parts: list[bytes] = []
    total = 0
    try:
        while pos < end:
            frame = _ZSTD.decompressobj()
            while not frame.eof:
                if pos >= end:
                    raise CompressionError("zstd data ends in the middle of a frame (truncated)")
                piece = max(4, (max_bytes - total) // _ZSTD_RATIO)
                out = frame.decompress(view[pos : pos + piece])
                pos = min(pos + piece, end)
                total += len(out)
                if total > max_bytes:
                    raise _too_big("zstd", max_bytes)
                parts.append(out)
            pos -= len(frame.unused_data)
    except zstandard.ZstdError as e:
        raise CompressionError(f"zstd data is corrupt: {e}") from e
    return b"".join(parts)
