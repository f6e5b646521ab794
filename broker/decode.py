"""Turn the raw bytes of a Kafka message key or value into something a person can read.

Pure functions, no Kafka client and no Django: :func:`decode` for display, :func:`hex_dump`,
:func:`wire_value` for the JSON API, :func:`encode_input` for producing messages, and
:func:`parse_avro_schema` for the Avro schema a user uploads for a topic.

Display decisions (the templates escape HTML; nothing here does):

* ``text`` of kind "text" shows C0 controls other than tab/LF/CR, DEL and C1 controls as ``\\xNN`` and the
  bidi embedding/override/isolate characters (U+202A-U+202E, U+2066-U+2069) as ``\\u202e``, so a message can
  neither hide characters nor reorder the page. ``data`` keeps the original string.
* Pretty JSON (kinds "json" and "avro") is ``indent=2`` with non-ASCII kept, except that DEL, C1 controls,
  the bidi characters above and lone surrogates are written as ``\\uXXXX`` escapes: the text stays valid,
  equivalent JSON and always encodes to UTF-8.
* Avro ``bytes`` and ``fixed`` values follow Avro's own JSON encoding (one code point U+0000-U+00FF per byte),
  logical types become strings (see broker.schemas.avro); in ``text`` printable ASCII is shown as is and
  every other byte as ``\\u00XX``.
* Records in a schema registry's wire format (magic byte 0, a 4-byte schema id) are read with the registry
  when one is given (broker.schemas.records): kinds "avro", "protobuf" and "json_schema", with ``schema``
  naming the schema; a record that cannot be read so is "binary" with the reason, its bytes intact.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from broker.errors import KazamiError
from broker.schemas import wire
from broker.schemas.avro import (
    AvroMismatch,
    AvroSchema,
    SchemaError,
    parse_avro_schema,
    plain,
    pretty,
    read_maybe_framed,
)
from broker.schemas.records import RecordDecoder

__all__ = [
    "DECODINGS",
    "INPUT_FORMATS",
    "AvroSchema",
    "Decoded",
    "InputError",
    "RecordDecoder",
    "SchemaError",
    "auto_data",
    "decode",
    "encode_input",
    "hex_dump",
    "parse_avro_schema",
    "wire_value",
]

DECODINGS = ("auto", "text", "json", "hex", "avro")
INPUT_FORMATS = ("text", "json", "json-compact", "hex", "base64")
SCHEMA_KINDS = ("avro", "protobuf", "json_schema")  # what a registry's record decodes to

NO_SCHEMA = "no Avro schema uploaded for this topic"


NO_SCHEMA = "no Avro schema uploaded for this topic"


class InputError(KazamiError):
    """Text typed for a new message that is not valid in the chosen format; the message says where."""


# ---------------------------------------------------------------------------------------------------------
# Character classes


# C0 controls except \t \n \r, DEL and C1 controls: what makes bytes "not text" in auto mode.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Embedding, override and isolate characters: they can reorder the text around them.
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
# Inside pretty JSON (already escaped by json for C0 controls): what else to write as \uXXXX.
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# What JSON can start with: an object, an array, a string, a number, true, false or null.
_JSON_START = re.compile(r'[ \t\n\r]*(?:[\[{"\-0-9]|true|false|null)')

_CONTROL_CODES = [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]
_BIDI_CODES = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE: dict[int, str] = {code: f"\\x{code:02x}" for code in _CONTROL_CODES}
_VISIBLE.update({code: f"\\u{code:04x}" for code in _BIDI_CODES})
_CONTROL_EXTRA = 3  # "\x00" replaces one character with four
_BIDI_EXTRA = 5  # "\u202e" replaces one character with six

_PRINTABLE_ASCII = bytes(b if 0x20 <= b < 0x7F else 0x2E for b in range(256))


def _make_visible(text: str) -> str:
    return text.translate(_VISIBLE)


def _visible_length(text: str) -> int:
    """len(_make_visible(text)) without building it."""
    return len(text) + _CONTROL_EXTRA * _CONTROL.subn("", text)[1] + _BIDI_EXTRA * _BIDI.subn("", text)[1]


def _safe_json(text: str) -> str:
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


# ---------------------------------------------------------------------------------------------------------
# Hex dump


def _group_width(count: int) -> int:
    return 3 * count - 1 if count > 0 else 0


def _hex_column_width(width: int) -> int:
    half = (width + 1) // 2
    rest = width - half
    return _group_width(half) + (2 + _group_width(rest) if rest else 0)


def hex_dump(raw: bytes, width: int = 16, limit: int | None = None) -> str:
    """Return the classic dump of ``raw``, one line per ``width`` bytes, lines joined by "\\n" (no final newline).

    Each line is an offset of at least 8 hex digits, two spaces, the bytes as hex in two groups (8 + 8 for the
    default width) separated by two spaces and padded so the last column lines up, two spaces, and the bytes
    as ASCII between ``|`` with "." for anything not printable ASCII -- the layout of ``hexdump -C``::

        00000000  48 65 6c 6c 6f 2c 20 4b  61 66 6b 61 21 00 01 02  |Hello, Kafka!...|
        00000010  ff 7f 78 79 7a                                    |..xyz|

    Only the first ``limit`` bytes are dumped when ``limit`` is given. An empty input gives "".
    Raises ValueError for a width below 1 or a negative limit.
    """
    if width < 1:
        raise ValueError(f"hex dump width must be at least 1, not {width}")
    if limit is not None and limit < 0:
        raise ValueError(f"hex dump limit must not be negative, not {limit}")
    data = raw if limit is None or limit >= len(raw) else raw[:limit]
    half = (width + 1) // 2
    first_width = _group_width(half)
    second_width = _group_width(width - half)
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        column = chunk[:half].hex(" ").ljust(first_width)
        if width > half:
            column += "  " + chunk[half:].hex(" ").ljust(second_width)
        lines.append(f"{offset:08x}  {column}  |{chunk.translate(_PRINTABLE_ASCII).decode('ascii')}|")
    return "\n".join(lines)


def _hex_dump_length(size: int, width: int = 16) -> int:
    """len(hex_dump(raw, width)) for len(raw) == size, computed without building the dump."""
    if size <= 0:
        return 0
    lines = -(-size // width)
    per_line = 2 + _hex_column_width(width) + 2 + 2  # separators around the hex column, and the two "|"
    offset_digits = 0
    digits = 8
    low = 0
    while low < lines * width:
        high = 16**digits
        first = -(-low // width)
        last = min(lines, -(-high // width))  # exclusive
        offset_digits += digits * max(0, last - first)
        low = high
        digits += 1
    return offset_digits + lines * per_line + size + (lines - 1)


# ---------------------------------------------------------------------------------------------------------
# decode()


@dataclass(frozen=True)
class Decoded:
    """One message key or value, ready to show."""

    kind: str  # "null" (tombstone / no key), "empty", "text", "json", "binary", "avro", "protobuf", "json_schema"
    decoding: str  # the decoding that produced ``text``; "auto" is resolved to the one chosen
    text: str  # what to show (cut to the limit)
    data: object  # json/avro: the value; text: the str; otherwise None
    error: str | None  # why the requested decoding failed, else None
    size: int  # len(raw), 0 for None
    truncated: bool  # ``text`` was cut to the limit
    full_length: int  # len of the text before cutting
    # A record read with a registry's schema (or one that named a schema id): {"id", "subject", "version", "type"}
    schema: dict[str, object] | None = None


def _cut(kind: str, decoding: str, text: str, data: object, size: int, limit: int) -> Decoded:
    return Decoded(kind, decoding, text[:limit], data, None, size, len(text) > limit, len(text))


def _binary(raw: bytes, limit: int, error: str | None = None) -> Decoded:
    shown = hex_dump(raw, limit=limit // 4)
    return Decoded("binary", "hex", shown, None, error, len(raw), len(raw) > limit // 4, _hex_dump_length(len(raw)))


def as_text(raw: bytes, text: str, limit: int) -> Decoded:
    """What ``decode`` gives for ``raw`` that "auto" read as ``text`` (auto_data's ("text", text))."""
    if len(text) <= limit:
        shown = _make_visible(text)
        full_length = len(shown)
    else:  # only escape what is shown; a 10 MB run of NULs would otherwise become 40 MB
        shown = _make_visible(text[:limit])
        full_length = _visible_length(text)
    return Decoded("text", "text", shown[:limit], text, None, len(raw), full_length > limit, full_length)


def _as_json(raw: bytes, value: object, limit: int) -> Decoded:
    pretty = _safe_json(json.dumps(value, indent=2, ensure_ascii=False))
    return _cut("json", "json", pretty, value, len(raw), limit)


def _as_avro(raw: bytes, value: object, limit: int) -> Decoded:
    parts: list[str] = []
    pretty(value, parts)
    return _cut("avro", "avro", _safe_json("".join(parts)), plain(value), len(raw), limit)


# A registry record's document on one line (a list's row): bytes make it raise TypeError (see _one_line_of).
_LINE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def _one_line_of(kind: str, value: object) -> tuple[str, object]:
    """(the document's JSON on one line, the document as JSON data). An Avro value holding no bytes is its own
    JSON data (fastavro gives dicts, lists and scalars): encoded at C speed, not walked in Python first."""
    try:
        return _LINE_JSON.encode(value), value
    except TypeError:
        data = plain(value) if kind == "avro" else value
        return _LINE_JSON.encode(data), data


def _from_registry(raw: bytes, registry: RecordDecoder, limit: int, subject: str | None, one_line: bool) -> Decoded:
    record = registry.read(raw, subject)
    if record.kind == "binary":
        return dataclasses.replace(_binary(raw, limit, record.error), schema=record.schema or None)
    try:
        if one_line:  # as a list's JSON row: the line as encoded (the page escapes it; see console.present)
            text, data = _one_line_of(record.kind, record.value)
            size = len(raw)
            return Decoded(
                record.kind,
                record.kind,
                text[:limit],
                data,
                record.error,
                size,
                len(text) > limit,
                len(text),
                record.schema,
            )
        if record.kind == "avro":
            shown = _as_avro(raw, record.value, limit)
        else:
            text = _safe_json(json.dumps(record.value, indent=2, ensure_ascii=False))
            shown = _cut(record.kind, record.kind, text, record.value, len(raw), limit)
    except (RecursionError, ValueError) as exc:  # nested too deeply to write out; a circular value cannot be
        reason = f"schema id {record.schema.get('id')}: the document cannot be shown: {type(exc).__name__}"
        return dataclasses.replace(_binary(raw, limit, reason), schema=record.schema)
    return dataclasses.replace(shown, error=record.error, schema=record.schema)


def _utf8_error(exc: UnicodeDecodeError) -> str:
    return f"not valid UTF-8 at byte {exc.start}"


def _json_error(exc: ValueError | RecursionError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "not valid JSON: nested too deeply to parse"
    return f"not valid JSON: {exc}"


def auto_data(raw: bytes | None) -> tuple[str, object]:
    """What "auto" makes of ``raw`` without a schema or the text to show (what a search's filter reads): ("json",
    value), ("text", str) for UTF-8 without controls but tab/LF/CR, ("binary", bytes), ("null"|"empty", None)."""
    if not raw:
        return ("null" if raw is None else "empty"), None
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return "binary", bytes(raw)
    body = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark before JSON is allowed
    if _JSON_START.match(body):
        try:
            value = _STRICT_JSON.decode(body)
            if not (isinstance(value, float) and not math.isfinite(value)):  # 1e999 is no JSON number
                return "json", value
        except (ValueError, RecursionError, InputError):
            pass  # not JSON after all: maybe text
    return ("text", text) if _CONTROL.search(text) is None else ("binary", bytes(raw))


def _auto(
    raw: bytes,
    schema: AvroSchema | None,
    limit: int,
    registry: RecordDecoder | None,
    subject: str | None,
    one_line: bool = False,
) -> Decoded:
    if raw[0] != wire.MAGIC:  # a zero byte first is never JSON or text (a control character): no need to look
        kind, data = auto_data(raw)
        if kind == "json":
            return _as_json(raw, data, limit)
        if kind == "text":
            return as_text(raw, str(data), limit)
        return _binary(raw, limit)
    if not wire.is_framed(raw):
        return _binary(raw, limit)
    return _framed(raw, schema, limit, registry, subject, one_line)


def _framed(
    raw: bytes,
    schema: AvroSchema | None,
    limit: int,
    registry: RecordDecoder | None,
    subject: str | None,
    one_line: bool,
) -> Decoded:
    found = _from_registry(raw, registry, limit, subject, one_line) if registry is not None else None
    if found is not None and found.kind != "binary":
        return found
    if schema is not None:  # the topic's uploaded schema, when the registry does not read it
        try:
            return _as_avro(raw, read_maybe_framed(raw, schema, framed_only=True), limit)
        except (AvroMismatch, RecursionError):
            pass  # a guess, not a request: no error
    return found or _binary(raw, limit)


def decode(
    raw: bytes | None,
    decoding: str = "auto",
    schema: AvroSchema | None = None,
    limit: int = 20_000,
    registry: RecordDecoder | None = None,
    subject: str | None = None,
    one_line: bool = False,
) -> Decoded:
    """Decode a message key or value for display and return a Decoded; never raises for any bytes.

    ``None`` gives kind "null" (a tombstone, or no key) and b"" kind "empty", whatever the decoding; their
    ``decoding`` is the one requested, "auto" included. Otherwise:

    * "auto": JSON (any value, scalars included; a leading byte-order mark allowed) -> "json"; UTF-8
      without control characters (tab, LF and CR allowed)
      -> "text"; bytes in a schema registry's wire format (0x00 + 4-byte schema id) read with ``registry``
      when one is given -> "avro", "protobuf" or "json_schema" with ``schema`` set (``error`` set too when a
      JSON Schema document fails its schema); otherwise, framed bytes that read with the uploaded ``schema``
      -> "avro"; anything else -> "binary". Auto mode sets ``error`` only for framed bytes the registry
      could not read (unknown id, registry down or not configured, bytes that do not read with the schema).
      ``subject`` (``<topic>-value``): the subject to name when the schema id is registered under several.
      ``one_line``: such a record's text is its document's JSON on one line (a list's row), not pretty-printed.
    * "text": the UTF-8 text, or error 'not valid UTF-8 at byte N' (N counted from 0, like the dump).
    * "json": any JSON value, scalars included, or error 'not valid JSON: <reason> at line L column C'.
    * "hex": always the dump.
    * "avro": the value read with ``schema`` (Confluent framing is stripped when present), or an error
      naming the problem; without a schema the error is 'no Avro schema uploaded for this topic'.

    A failed decoding falls back to the hex dump: kind "binary", ``decoding`` "hex", ``error`` set.
    ``text`` is cut to ``limit`` characters; a dump covers at most ``limit // 4`` bytes. ``truncated`` and
    ``full_length`` describe the whole text, which for a dump is never built.
    Raises ValueError for an unknown decoding or a negative limit.
    """
    if registry is not None and decoding == "auto" and limit >= 0 and raw and raw[0] == wire.MAGIC and len(raw) >= 5:
        return _framed(bytes(raw), schema, limit, registry, subject, one_line)  # the common case of such topics
    if decoding not in DECODINGS:
        raise ValueError(f"unknown decoding {decoding!r}; expected one of {', '.join(DECODINGS)}")
    if limit < 0:
        raise ValueError(f"limit must not be negative, not {limit}")
    if raw is None:
        return Decoded("null", decoding, "", None, None, 0, False, 0)
    raw = bytes(raw)
    if not raw:
        return Decoded("empty", decoding, "", None, None, 0, False, 0)
    if decoding == "auto":
        return _auto(raw, schema, limit, registry, subject, one_line)
    if decoding == "hex":
        return _binary(raw, limit)
    if decoding == "avro":
        if schema is None:
            return _binary(raw, limit, NO_SCHEMA)
        try:
            value = read_maybe_framed(raw, schema, framed_only=False)
            return _as_avro(raw, value, limit)
        except AvroMismatch as exc:
            return _binary(raw, limit, f"not valid Avro for the uploaded schema: {exc}")
        except RecursionError:
            return _binary(raw, limit, "not valid Avro for the uploaded schema: the value is nested too deeply to show")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _binary(raw, limit, _utf8_error(exc))
    if decoding == "text":
        return as_text(raw, text, limit)
    try:
        return _as_json(raw, json.loads(text[1:] if text.startswith("\ufeff") else text), limit)
    except (ValueError, RecursionError) as exc:
        return _binary(raw, limit, _json_error(exc))


# ---------------------------------------------------------------------------------------------------------
# The JSON API and producing messages


def wire_value(raw: bytes | None) -> dict[str, object]:
    """Return a key or value for the JSON API, losslessly.

    {"encoding": "utf-8", "data": text} when ``raw`` is valid UTF-8 (including b""),
    {"encoding": "base64", "data": standard base64} otherwise, {"encoding": None, "data": None} for None.
    """
    if raw is None:
        return {"encoding": None, "data": None}
    try:
        return {"encoding": "utf-8", "data": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"encoding": "base64", "data": base64.b64encode(raw).decode("ascii")}


_JSON_TOKEN_OR_SPACE = re.compile(r'("(?:[^"\\]|\\.)*")|[ \t\n\r]+')
_NON_HEX = re.compile(r"[^0-9a-fA-F]")
_WORD = re.compile(r"\S+")
_BASE64_SPACE = re.compile(r"\s+")


def _reject_constant(name: str) -> object:
    raise InputError(f"{name} is not valid JSON")  # NaN, Infinity: Python's extension, not JSON


_STRICT_JSON = json.JSONDecoder(parse_constant=_reject_constant)  # shared: json.loads(s, **kw) builds one a call


def _input_json(text: str) -> bytes:
    try:
        json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError("the JSON is nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}") from None
    return _input_text(text)


def _input_json_compact(text: str) -> bytes:
    _input_json(text)
    # Drop the whitespace between tokens but keep every token as typed: numbers keep their digits,
    # strings their escapes and objects their keys in order (json.dumps(json.loads()) would change them).
    compact = _JSON_TOKEN_OR_SPACE.sub(lambda match: match.group(1) or "", text)
    return _input_text(compact)


def _input_hex(text: str) -> bytes:
    digits = []
    for word in _WORD.finditer(text):
        start, token = word.start(), word.group()
        if token[:2] in ("0x", "0X"):
            if len(token) == 2:
                raise InputError(f"a 0x prefix with no hex digits at character {start + 1}")
            start, token = start + 2, token[2:]
        bad = _NON_HEX.search(token)
        if bad is not None:
            raise InputError(f"not a hex digit at character {start + bad.start() + 1}: {bad.group()!r}")
        digits.append(token)
    joined = "".join(digits)
    if len(joined) % 2:
        raise InputError(f"an odd number of hex digits ({len(joined)}): each byte needs two")
    return bytes.fromhex(joined)


def _input_base64(text: str) -> bytes:
    compact = _BASE64_SPACE.sub("", text)
    if "-" in compact or "_" in compact:
        compact = compact.replace("-", "+").replace("_", "/")
    if len(compact) % 4 in (2, 3):  # padding left out
        compact += "=" * (4 - len(compact) % 4)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InputError(f"not valid base64: {exc}") from None


def _input_text(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"the text has a lone surrogate at character {exc.start + 1}") from None


_ENCODERS: dict[str, Callable[[str], bytes]] = {
    "text": _input_text,
    "json": _input_json,
    "json-compact": _input_json_compact,
    "hex": _input_hex,
    "base64": _input_base64,
}


def encode_input(text: str, fmt: str) -> bytes:
    """Return the bytes of a message key or value typed as ``text`` in format ``fmt``.

    * "text": UTF-8.
    * "json": validated, then kept byte for byte as typed (UTF-8). NaN and Infinity are refused, as
      standard JSON has no such values.
    * "json-compact": validated, then compacted (whitespace between tokens dropped; every token kept as
      typed).
    * "hex": hex digits; whitespace anywhere between them and a 0x prefix on each group are allowed
      ("0xDEAD beef", "de ad be ef").
    * "base64": standard or URL-safe alphabet; whitespace and missing padding are allowed.

    Raises InputError with a message for the user ('not valid JSON at line 1 column 8: ...',
    "not a hex digit at character 3: 'g'", counted from 1) when the text is not valid in that format,
    and ValueError for an unknown format.
    """
    encoder = _ENCODERS.get(fmt)
    if encoder is None:
        raise ValueError(f"unknown input format {fmt!r}; expected one of {', '.join(INPUT_FORMATS)}")
    return encoder(text)
