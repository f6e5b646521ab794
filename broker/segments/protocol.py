"""Kafka's protocol-message encoding, read as its generated message classes read it and printed as their
JSON converters print it: what ``decoders`` needs to show the records of ``__consumer_offsets`` and
``__transaction_state`` the way kafka-dump-log does.

A message schema is data here (``Struct`` of ``Field``, the same names, types and version ranges as
Kafka's ``*.json`` message specs), and one reader walks any of them. The reader follows the code Kafka's
message generator writes, not only the format: which field is read at which version (the generator tests a
version bound only where the range it can be in crosses it, so an out-of-range version reads like its
nearest valid neighbour), the compact lengths and tagged fields of flexible versions, and the exception
each failure throws, whose message (``ProtocolError.message``) is what the tool prints.

``to_json`` prints a read message as Jackson's ``JsonNode.toString`` prints the converters' trees: no
spaces, fields in schema order, bytes as padded base64, UUIDs as Kafka's url-safe base64, strings with
Jackson's escapes. Nothing here imports Django.
"""

from __future__ import annotations

import base64
import codecs
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Versions = tuple[int, int]
NONE: Versions = (0, -1)  # Kafka's Versions.NONE: a range that contains nothing
MAX_VERSION = 0x7FFF

INT8, INT16, INT32, INT64, UUID, STRING, BYTES = "int8", "int16", "int32", "int64", "uuid", "string", "bytes"
UINT16 = "uint16"
_FIXED = {INT8: ">b", INT16: ">h", INT32: ">i", INT64: ">q", UINT16: ">H"}

UNDERFLOW = "java.nio.BufferUnderflowException"
RUNTIME = "java.lang.RuntimeException"
UNSUPPORTED_VERSION = "org.apache.kafka.common.errors.UnsupportedVersionException"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"


class ProtocolError(Exception):
    """A message that cannot be read: ``message`` is the Java exception's message (``None`` where it has
    none, as a ``BufferUnderflowException``), ``java_class`` the exception Kafka's reader throws."""

    def __init__(self, message: str | None, java_class: str = RUNTIME) -> None:
        super().__init__(message if message is not None else java_class)
        self.message = message
        self.java_class = java_class

    @property
    def text(self) -> str:
        """The message as Java's string concatenation shows it (``"null"`` when there is none)."""
        return "null" if self.message is None else self.message


def versions(spec: str) -> Versions:
    """A version range as message specs write them: ``"none"``, ``"3"``, ``"0-4"`` or ``"2+"``."""
    if spec == "none":
        return NONE
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    low, _, high = spec.partition("-")
    return (int(low), int(high or low))


def intersect(a: Versions, b: Versions) -> Versions:
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else NONE


def member(version: int, containing: Versions, possible: Versions) -> bool:
    """Whether the generated code treats ``version`` as inside ``containing`` when the version can only be
    in ``possible``: it compares against a bound only where ``possible`` crosses it (its VersionConditional)."""
    (c_low, c_high), (p_low, p_high) = containing, possible
    if p_low < c_low:
        if p_high > c_high:
            return c_low <= version <= c_high
        return p_high >= c_low and version >= c_low
    if p_high >= c_low and p_low <= c_high:
        return p_high <= c_high or version <= c_high
    return False


@dataclass(frozen=True)
class Field:
    """One field of a message spec. ``type`` is a primitive type name or a ``Struct``; ``array`` makes it
    ``[]type``. ``name`` is the camel-case name the JSON converters print. A tagged field is tagged in all
    its versions (true of every field these schemas tag) and printed only when it differs from ``default``,
    the value it has when absent (for a struct, the empty struct, whatever the spec's ``"default"`` says)."""

    name: str
    type: str | Struct
    versions: Versions
    array: bool = False
    nullable: Versions = NONE
    tag: int | None = None
    zero_copy: bool = False
    default: Any = None


@dataclass(frozen=True)
class Struct:
    """A message, a common struct or an inline struct. ``parent`` is the range the generated reader is
    written for (the message's valid versions for an inline struct; its own ``versions`` otherwise):
    reading a version outside it fails with ``Can't read version``. ``flexible`` is the message's flexible
    versions, which every struct of a message shares."""

    name: str
    fields: tuple[Field, ...]
    versions: Versions
    parent: Versions
    flexible: Versions


def field(
    name: str,
    type_: str | Struct,
    spec: str = "0+",
    *,
    array: bool = False,
    nullable: str = "none",
    tag: int | None = None,
    zero_copy: bool = False,
    default: Any = None,
) -> Field:
    """A ``Field`` from a spec's strings, its name camel-cased as the generator does."""
    camel = name[:1].lower() + name[1:]
    return Field(camel, type_, versions(spec), array, versions(nullable), tag, zero_copy, default)


def message(name: str, valid: str, flexible: str, fields: Sequence[Field]) -> Struct:
    """A top-level message (or a common struct, with ``valid`` as its versions)."""
    return Struct(name, tuple(fields), versions(valid), versions(valid), versions(flexible))


def inline(name: str, spec: str, parent: str, flexible: str, fields: Sequence[Field]) -> Struct:
    """An inline struct: the element type of a field with versions ``spec`` in a message valid in ``parent``."""
    return Struct(name, tuple(fields), versions(spec), versions(parent), versions(flexible))


def _java_utf8_errors(exc: UnicodeError) -> tuple[str, int]:
    """Python's replacement of malformed UTF-8, except where Java's ``new String(bytes, UTF_8)`` differs:
    it takes ED followed by A0..BF (a UTF-16 surrogate encoded in UTF-8) as one malformed sequence of up
    to three bytes, where Python replaces each byte."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    data, at = exc.object, exc.start
    if data[at] == 0xED and at + 1 < len(data) and 0xA0 <= data[at + 1] <= 0xBF:
        if at + 2 >= len(data):
            return "\ufffd", len(data)
        return "\ufffd", at + 3 if data[at + 2] & 0xC0 == 0x80 else at + 2
    return "\ufffd", exc.end


codecs.register_error("kazami-java-utf8", _java_utf8_errors)


def java_utf8(data: bytes) -> str:
    """``data`` decoded as Java's ``new String(data, UTF_8)`` decodes it: malformed bytes replaced by U+FFFD."""
    return data.decode("utf-8", "kazami-java-utf8")


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class Reader:
    """A ``ByteBufferAccessor`` over ``data``: reads advance ``pos`` and fail as Java's buffer does."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def fixed(self, kind: str) -> int:
        fmt = _FIXED[kind]
        size = struct.calcsize(fmt)
        if self.remaining < size:
            raise ProtocolError(None, UNDERFLOW)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def unsigned_varint(self) -> int:
        """ByteUtils.readUnsignedVarint: up to 5 bytes, the fifth's bits shifted into (and past) an int."""
        result = 0
        for i in range(5):
            b = self.fixed(INT8)
            if i == 4:
                result = _int32(result | (b << 28))
                if b < 0:
                    raise ProtocolError(
                        "Varint is too long, the most significant bit in the 5th byte is set, converted value: "
                        + format(result & 0xFFFFFFFF, "x"),
                        ILLEGAL_ARGUMENT,
                    )
                return result
            result |= (b & 0x7F) << (7 * i)
            if b >= 0:
                return _int32(result)
        raise AssertionError("unreachable")

    def array(self, size: int) -> bytes:
        """readArray: ``size`` bytes, or the RuntimeException Kafka throws when fewer remain."""
        if size > self.remaining:
            raise ProtocolError(f"Error reading byte array of {size} byte(s): only {self.remaining} byte(s) available")
        if size < 0:
            raise ProtocolError(str(size), "java.lang.NegativeArraySizeException")
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def byte_buffer(self, size: int) -> bytes:
        """readByteBuffer (zero-copy bytes): a slice whose limit fails when it passes the buffer's end."""
        if size > self.remaining:
            raise ProtocolError(f"newLimit > capacity: ({size} > {self.remaining})", ILLEGAL_ARGUMENT)
        return self.array(size)

    def uuid(self) -> str:
        if self.remaining < 16:
            raise ProtocolError(None, UNDERFLOW)
        return base64.urlsafe_b64encode(self.array(16)).rstrip(b"=").decode("ascii")


class Message(dict[str, Any]):
    """A read struct: its printed fields by name, in schema order; ``unknown_tags`` counts the tagged
    fields it carried that its schema does not know (they make it differ from its default)."""

    unknown_tags = 0


def read_struct(reader: Reader, spec: Struct, version: int) -> Message:
    """The fields of ``spec`` read at ``version``, as the generated ``read`` method reads them, in schema
    order and only those the JSON converter prints (present in ``version``; tagged ones when not default).

    Raises ``ProtocolError`` with the message the generated code's exception has."""
    if not member(version, spec.parent, spec.versions):
        raise ProtocolError(f"Can't read version {version} of {spec.name}", UNSUPPORTED_VERSION)
    current = intersect(spec.parent, spec.versions)
    values: dict[str, Any] = {}
    for f in spec.fields:
        mandatory = NONE if f.tag is not None else f.versions
        if member(version, mandatory, current):
            values[f.name] = _read_field(reader, spec, f, version, intersect(current, mandatory), tagged=False)
    unknown = 0
    if member(version, spec.flexible, current):
        flexible = intersect(current, spec.flexible)
        for _ in range(reader.unsigned_varint()):
            tag = reader.unsigned_varint()
            size = reader.unsigned_varint()
            known = next((f for f in spec.fields if f.tag == tag), None)
            if known is None:
                reader.array(size)
                unknown += 1
            elif member(version, known.versions, flexible):
                values[known.name] = _read_field(
                    reader, spec, known, version, intersect(flexible, known.versions), tagged=True
                )
            else:
                raise ProtocolError(f"Tag {tag} is not valid for version {version}")
    out = Message((f.name, values[f.name]) for f in spec.fields if f.name in values and _printed(f, values[f.name]))
    out.unknown_tags = unknown
    return out


def _printed(f: Field, value: Any) -> bool:
    return f.tag is None or value != f.default or getattr(value, "unknown_tags", 0) > 0


def _read_field(reader: Reader, spec: Struct, f: Field, version: int, present: Versions, tagged: bool) -> Any:
    if isinstance(f.type, Struct) and not f.array:
        if member(version, f.nullable, present):
            absent = reader.unsigned_varint() <= 0 if tagged else reader.fixed(INT8) < 0
            if absent:
                return None
        return read_struct(reader, f.type, version)
    flexible = member(version, spec.flexible, present)
    if f.array:
        return _read_array(reader, f, version, present, flexible)
    if f.type in (STRING, BYTES):
        return _read_sized(reader, f.name, str(f.type), flexible, member(version, f.nullable, present), f.zero_copy)
    if f.type == UUID:
        return reader.uuid()
    return reader.fixed(str(f.type))


def _length(reader: Reader, flexible: bool, short: bool) -> int:
    """A compact length (varint, plus one) in flexible versions, else an int16 (strings) or an int32."""
    if flexible:
        return _int32(reader.unsigned_varint() - 1)
    return reader.fixed(INT16 if short else INT32)


def _read_array(reader: Reader, f: Field, version: int, present: Versions, flexible: bool) -> list[Any] | None:
    length = _length(reader, flexible, short=False)
    if length < 0:
        if member(version, f.nullable, present):
            return None
        raise ProtocolError(f"non-nullable field {f.name} was serialized as null")
    if length > reader.remaining:
        raise ProtocolError(
            f"Tried to allocate a collection of size {length}, but there are only {reader.remaining} bytes remaining."
        )
    items: list[Any] = []
    for _ in range(length):
        if isinstance(f.type, Struct):
            items.append(read_struct(reader, f.type, version))
        elif f.type in (STRING, BYTES):
            items.append(_read_sized(reader, f"{f.name} element", f.type, flexible, False, False))
        elif f.type == UUID:
            items.append(reader.uuid())
        else:
            items.append(reader.fixed(f.type))
    return items


def _read_sized(reader: Reader, name: str, kind: str, flexible: bool, nullable: bool, zero_copy: bool) -> Any:
    """A string (decoded as Java's ``new String(bytes, UTF_8)``, malformed bytes replaced) or bytes."""
    length = _length(reader, flexible, short=kind == STRING)
    if length < 0:
        if nullable:
            return None
        raise ProtocolError(f"non-nullable field {name} was serialized as null")
    if kind == STRING:
        if length > 0x7FFF:
            raise ProtocolError(f"string field {name} had invalid length {length}")
        return java_utf8(reader.array(length))
    return reader.byte_buffer(length) if zero_copy else reader.array(length)


# ---------------------------------------------------------------- JSON, as Jackson writes it

_SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def json_string(text: str) -> str:
    """``text`` quoted as Jackson quotes it: control characters escaped (``\\u00XX`` in upper case where
    there is no short escape), everything else, non-ASCII included, as it is."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if code in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[code])
        elif code < 0x20:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_json(value: Any) -> str:
    """A read message (or part of one) as Jackson's ``JsonNode.toString``: objects in field order, no
    spaces, bytes as base64 with padding, ``None`` as ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, bytes):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if isinstance(value, dict):
        return "{" + ",".join(json_string(k) + ":" + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise TypeError(f"cannot print {type(value).__name__} as JSON")
