"""Avro: the schemas a user uploads for a topic and those a schema registry holds, and the values they read.

Pure functions, no Kafka client and no Django. :func:`parse_avro_schema` checks a schema's JSON text and
prepares it for reading (:class:`AvroSchema`); :func:`read_avro` reads one value's binary encoding (no
container header, no wire-format prefix); :func:`plain` and :func:`pretty` give that value as JSON data
and as pretty JSON text.

Avro ``bytes`` and ``fixed`` values follow Avro's own JSON encoding: one code point U+0000-U+00FF per byte.
Logical types become strings: decimals in plain notation (``"12.34"``, exact, never rounded),
timestamps/dates/times as ISO 8601 and UUIDs in canonical form. A logical value that cannot be converted
(a timestamp out of range, a decimal over 1 KiB) is kept as its underlying value instead of failing the
whole message.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

import fastavro
from fastavro import _read_py
from fastavro.read import LOGICAL_READERS

from broker.errors import KazamiError
from broker.schemas.wire import HEADER as CONFLUENT_HEADER
from broker.schemas.wire import MAGIC as CONFLUENT_MAGIC

__all__ = ["AvroMismatch", "AvroSchema", "SchemaError", "parse_avro_schema", "plain", "pretty", "read_avro"]

MAX_SCHEMA_BYTES = 1024 * 1024
MAX_SCHEMA_DEPTH = 200  # nesting levels of types; keeps fastavro's compiled (recursive) reader far from the C stack
MAX_DECIMAL_BYTES = 1024  # converting a huge unscaled integer is quadratic: 1 MB takes minutes


class SchemaError(KazamiError):
    """An Avro schema that does not parse; the message says why, e.g. 'unknown type "strin"'."""


# ---------------------------------------------------------------------------------------------------------
# Avro schema


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# Logical types read by this module rather than by fastavro (see _LOGICAL_READERS below).
_OWN_LOGICAL = frozenset(
    {
        "decimal",
        "uuid",
        "date",
        "time-millis",
        "time-micros",
        "timestamp-millis",
        "timestamp-micros",
        "local-timestamp-millis",
        "local-timestamp-micros",
    }
)
_LOGICAL_PREFIX = "kazami."


class _SchemaWalk:
    """Checks fastavro cannot make: nesting depth, recursion, empty unions, arrays of items that take no bytes."""

    def __init__(self) -> None:
        self.recursive = False
        self._open: set[str] = set()
        self._zero_size: dict[str, bool] = {}

    def takes_no_bytes(self, schema: object, depth: int = 0) -> bool:
        """Visit ``schema`` (fastavro's parsed form) and say whether a value of it can be encoded in 0 bytes."""
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep")
        if isinstance(schema, str):
            return self._named_reference(schema)
        if isinstance(schema, list):
            if not schema:
                raise SchemaError("an empty union (a type of []) can hold no value")
            for branch in schema:
                self.takes_no_bytes(branch, depth + 1)
            return False  # the branch index always takes a byte
        if not isinstance(schema, dict):
            return False
        kind = schema.get("type")
        if isinstance(kind, (list, dict)):
            return self.takes_no_bytes(kind, depth + 1)
        if kind in ("record", "error"):
            name = str(schema.get("name"))
            self._open.add(name)
            fields = schema.get("fields") or []
            zero = all([self.takes_no_bytes(item.get("type"), depth + 1) for item in fields if isinstance(item, dict)])
            self._open.discard(name)
            self._zero_size[name] = zero
            return zero
        if kind == "fixed":
            zero = schema.get("size") == 0
            self._zero_size[str(schema.get("name"))] = zero
            return zero
        if kind == "enum":
            self._zero_size[str(schema.get("name"))] = False
            return False
        if kind == "array":
            if self.takes_no_bytes(schema.get("items"), depth + 1):
                raise SchemaError(
                    'arrays of items that take no bytes (such as "null" or an empty record) are not supported: '
                    "a few bytes could claim billions of items"
                )
            return False
        if kind == "map":
            self.takes_no_bytes(schema.get("values"), depth + 1)
            return False  # every entry has a key
        if isinstance(kind, str):
            return self._named_reference(kind)
        return False

    def _named_reference(self, name: str) -> bool:
        if name in _PRIMITIVES:
            return name == "null"
        if name in self._open:
            self.recursive = True
            return False
        return self._zero_size.get(name, False)


def _rename_logical_types(node: object) -> object:
    """A copy of a JSON schema whose logical types listed in _OWN_LOGICAL are renamed to ours."""
    if isinstance(node, list):
        return [_rename_logical_types(item) for item in node]
    if isinstance(node, dict):
        copy = {key: _rename_logical_types(value) for key, value in node.items()}
        logical = copy.get("logicalType")
        if isinstance(logical, str) and logical in _OWN_LOGICAL:
            copy["logicalType"] = _LOGICAL_PREFIX + logical
        return copy
    return node


def _unknown_type_name(exc: Exception) -> str:
    name: object = getattr(exc, "name", None)
    if isinstance(name, dict):
        name = name.get("type", name)
    return name if isinstance(name, str) else json.dumps(name, default=str)


def _fastavro_parse(schema: object, named: dict[str, Any] | None = None) -> object:
    """fastavro.parse_schema (``named``: the named types of referenced schemas, and where the schema's own go),
    with whatever it raises turned into a SchemaError that reads well."""
    try:
        return fastavro.parse_schema(schema, named_schemas=named)  # type: ignore[arg-type]
    except RecursionError:
        raise SchemaError("the schema is nested too deeply") from None
    except fastavro.schema.UnknownType as exc:
        raise SchemaError(f'unknown type "{_unknown_type_name(exc)}"') from None
    except fastavro.schema.SchemaParseException as exc:
        raise SchemaError(f"not a valid Avro schema: {_shorten(str(exc))}") from None
    except KeyError as exc:
        raise SchemaError(f'not a valid Avro schema: the attribute "{exc.args[0]}" is missing') from None
    except Exception as exc:  # noqa: BLE001 - fastavro raises TypeError, AttributeError... for malformed input
        detail = _shorten(str(exc)) or type(exc).__name__
        raise SchemaError(f"not a valid Avro schema: {detail}") from None


def _shorten(text: str, size: int = 300) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


@dataclass(frozen=True)
class AvroSchema:
    """An uploaded Avro schema: its JSON text and fastavro's parsed form (usable with fastavro's writers).

    Equality is by source text. Construction also prepares the reading form used by :func:`decode` and
    raises SchemaError for schemas that cannot be read safely (see :func:`parse_avro_schema`).
    """

    source: str
    parsed: object = field(compare=False, repr=False)
    # The JSON texts of the schemas it references (a registry's references), each after those it references.
    references: tuple[str, ...] = field(default=(), compare=False, repr=False)
    _reader: object = field(init=False, compare=False, repr=False)
    _recursive: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        walk = _SchemaWalk()
        walk.takes_no_bytes(self.parsed)
        try:
            renamed = _rename_logical_types(json.loads(self.source))
        except RecursionError:
            raise SchemaError("the schema is nested too deeply") from None
        except ValueError as exc:
            raise SchemaError(f"not valid JSON: {exc}") from None
        named: dict[str, Any] = {}
        for reference in self.references:
            _fastavro_parse(_rename_logical_types(json.loads(reference)), named)
        object.__setattr__(self, "_reader", _fastavro_parse(renamed, named))
        object.__setattr__(self, "_recursive", walk.recursive)


def parse_avro_schema(text: str, references: tuple[str, ...] = ()) -> AvroSchema:
    """Parse the JSON text of an Avro schema and return it as an AvroSchema.

    Raises SchemaError, with a message meant for the user, when the text is over 1 MiB, is not JSON
    ('not valid JSON at line 1 column 5: Expecting value'), is not an Avro schema ('unknown type "strin"',
    a missing name, ...), is nested more than 200 levels deep, has an empty union, or has an array whose
    items take no bytes (such an array lets a few bytes of a message claim billions of items).
    """
    if len(text) > MAX_SCHEMA_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
        raise SchemaError("the schema is larger than 1 MB")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SchemaError("the schema is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with too many digits
        raise SchemaError(f"not valid JSON: {exc}") from None
    if not isinstance(schema, (dict, list, str)):
        raise SchemaError(f"an Avro schema is a JSON object, array or type name, not {json.dumps(schema)[:40]}")
    named: dict[str, Any] = {}
    for reference in references:  # the named types they define are known to the schema
        _fastavro_parse(_load_reference(reference), named)
    return AvroSchema(text, _fastavro_parse(schema, named), references)


def _load_reference(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(f"a referenced schema is not valid JSON: {_shorten(str(exc))}") from None


# ---------------------------------------------------------------------------------------------------------
# Logical types: registered under our own names, so fastavro's readers for everyone else are untouched.

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DAY_MILLIS = 86_400_000
_DAY_MICROS = 86_400_000_000


def _read_decimal(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
    if not isinstance(data, bytes) or len(data) > MAX_DECIMAL_BYTES:
        return data
    scale = writer_schema.get("scale", 0) if isinstance(writer_schema, dict) else 0
    if not isinstance(scale, int) or not 0 <= scale <= 1000:
        return data
    unscaled = int.from_bytes(data, "big", signed=True)
    if scale == 0:
        return str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")  # as format(Decimal(f"{unscaled}E-{scale}"), "f") writes it
    return f"{'-' if unscaled < 0 else ''}{digits[:-scale]}.{digits[-scale:]}"


def _timestamp(base: datetime, unit: str) -> Callable[[Any, Any, Any], Any]:
    step = timedelta(**{unit: 1})  # times an int: what timedelta(**{unit: data}) gives, without a dict a record

    def read(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
        if not isinstance(data, (int, float)):
            return data
        try:
            return (base + step * data).isoformat(timespec=unit)
        except (OverflowError, ValueError):
            return data

    return read


def _read_date(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
    try:
        return date.fromordinal(data + _EPOCH_ORDINAL).isoformat()
    except (OverflowError, ValueError, TypeError):
        return data


def _time_of_day(per_day: int, unit: str) -> Callable[[Any, Any, Any], Any]:
    def read(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
        if not isinstance(data, int) or not 0 <= data < per_day:
            return data
        moment = _EPOCH_NAIVE + timedelta(**{unit: data})
        return moment.time().isoformat(timespec=unit)

    return read


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _read_uuid(data: Any, writer_schema: Any = None, reader_schema: Any = None) -> Any:
    if isinstance(data, str) and _CANONICAL_UUID.fullmatch(data):
        return data  # already in canonical form: what str(uuid.UUID(data)) gives, 5x faster
    try:
        if isinstance(data, bytes):
            return str(uuid.UUID(bytes=data)) if len(data) == 16 else data
        return str(uuid.UUID(data))
    except (ValueError, TypeError, AttributeError):
        return data


_LOGICAL_READERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "bytes-decimal": _read_decimal,
    "fixed-decimal": _read_decimal,
    "string-uuid": _read_uuid,
    "fixed-uuid": _read_uuid,
    "int-date": _read_date,
    "int-time-millis": _time_of_day(_DAY_MILLIS, "milliseconds"),
    "long-time-micros": _time_of_day(_DAY_MICROS, "microseconds"),
    "long-timestamp-millis": _timestamp(_EPOCH, "milliseconds"),
    "long-timestamp-micros": _timestamp(_EPOCH, "microseconds"),
    "long-local-timestamp-millis": _timestamp(_EPOCH_NAIVE, "milliseconds"),
    "long-local-timestamp-micros": _timestamp(_EPOCH_NAIVE, "microseconds"),
}


def _register_logical_readers() -> None:
    for key, reader in _LOGICAL_READERS.items():
        base, _, logical = key.partition("-")
        LOGICAL_READERS[f"{base}-{_LOGICAL_PREFIX}{logical}"] = reader


_register_logical_readers()


# ---------------------------------------------------------------------------------------------------------
# Avro reading and rendering


class AvroMismatch(Exception):
    """The bytes do not hold one value of the schema; the message says why."""


def read_avro(body: bytes, schema: AvroSchema) -> object:
    stream = io.BytesIO(body)
    # fastavro's compiled reader recurses on the C stack, so data nested 10,000 deep in a recursive schema
    # would crash the process; its pure-Python reader raises RecursionError instead.
    reader = _read_py.schemaless_reader if schema._recursive else fastavro.schemaless_reader
    try:
        value = reader(stream, schema._reader, None)  # type: ignore[arg-type]
    except EOFError:
        raise AvroMismatch("the data ends before the value does") from None
    except RecursionError:
        raise AvroMismatch("the value is nested too deeply to show") from None
    except UnicodeDecodeError as exc:
        raise AvroMismatch(f"a string is not valid UTF-8 ({exc.reason})") from None
    except IndexError:
        raise AvroMismatch("a union branch or enum symbol index is out of range") from None
    except Exception as exc:  # noqa: BLE001 - arbitrary bytes make fastavro raise all sorts of things
        raise AvroMismatch(_shorten(f"{type(exc).__name__}: {exc}")) from None
    left = len(body) - stream.tell()
    if left:
        raise AvroMismatch(f"{left} byte{'s' if left != 1 else ''} left over after the value")
    return value


def read_maybe_framed(raw: bytes, schema: AvroSchema, framed_only: bool) -> object:
    """The value in ``raw``: Confluent-framed first when it looks framed, then (unless framed_only) as is."""
    if len(raw) < CONFLUENT_HEADER or raw[0] != CONFLUENT_MAGIC:
        if framed_only:
            raise AvroMismatch("the bytes do not start with the Confluent magic byte and a schema id")
        return read_avro(raw, schema)
    schema_id = int.from_bytes(raw[1:CONFLUENT_HEADER], "big")
    try:
        return read_avro(raw[CONFLUENT_HEADER:], schema)
    except AvroMismatch as framed_failure:
        if framed_only:
            raise
        failure = AvroMismatch(f"(Confluent schema id {schema_id}) {framed_failure}")
    try:  # a plain Avro body can start with a zero byte too
        return read_avro(raw, schema)
    except AvroMismatch:
        raise failure from None


def plain(value: object) -> object:
    """``value`` with bytes as Avro's JSON form (one code point per byte) and tuples as lists."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    if isinstance(value, (bytes, bytearray)):
        return encode_basestring_ascii(bytes(value).decode("latin-1"))
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return encode_basestring(str(value))


def pretty(value: object, out: list[str], indent: str = "") -> None:
    """Append the JSON text of ``value`` to ``out``, laid out like json.dumps(indent=2)."""
    if isinstance(value, dict) and value:
        inner = indent + "  "
        out.append("{")
        for position, (key, item) in enumerate(value.items()):
            out.append(f"{',' if position else ''}\n{inner}{encode_basestring(str(key))}: ")
            pretty(item, out, inner)
        out.append(f"\n{indent}}}")
    elif isinstance(value, (list, tuple)) and value:
        inner = indent + "  "
        out.append("[")
        for position, item in enumerate(value):
            out.append(f"{',' if position else ''}\n{inner}")
            pretty(item, out, inner)
        out.append(f"\n{indent}]")
    elif isinstance(value, dict):
        out.append("{}")
    elif isinstance(value, (list, tuple)):
        out.append("[]")
    else:
        out.append(_scalar(value))
