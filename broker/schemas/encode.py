"""Documents written as JSON, checked against a registered schema and encoded in the wire format: Avro (fastavro's
schemaless writer, with the schemas it references), Protobuf (the JSON mapped onto the message compiled from the
registered .proto, after its message indexes), JSON Schema (the document checked with jsonschema, then its JSON).

A document the schema does not take is refused with :class:`DocumentError`, whose message names the field that
is wrong: ``value.amount: expected a number (double), got 'ten'``. Avro takes its JSON as the console shows Avro
records: a union's value as it is (or wrapped in the branch's name, as Avro's JSON encoding writes it), bytes and
fixed as one code point per byte, decimals as exact strings or numbers, dates, times and timestamps as ISO 8601
or as the numbers Avro keeps, UUIDs as text. Fields with a default may be left out; a field the record does not
have is refused.

:class:`SchemaEncoder` looks schemas up by subject and version and keeps each compiled one per id. Pure: no
Kafka, no Django; the registry is any :class:`~broker.schemas.model.SchemaSource`.
"""

from __future__ import annotations

import io
import json
import math
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

import fastavro
from google.protobuf import json_format, message_factory

from broker.errors import InvalidInput
from broker.schemas import json_schema, protobuf, wire
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegisteredSchema, SchemaSource
from broker.schemas.records import _avro_references

MAX_KEPT = 1_000  # compiled schemas kept per encoder
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
FLOAT_MAX = 3.4028234663852886e38
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DocumentError(InvalidInput):
    """A document the schema does not take, or one that is not JSON; ``part`` is "key" or "value", ``path``
    the field (``value.customer.id``), and the message starts with it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.part = path.split(".", 1)[0].split("[", 1)[0]
        self.problem = problem
        self.fields = {self.part: [str(self)]}  # the API's answer lists it under its part, as a form's errors


def child(path: str, name: str | int) -> str:
    """``path`` and one step further: ``.name`` for a field, ``[3]`` for an item, ``["a b"]`` for other keys."""
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if _IDENTIFIER.fullmatch(name) else f"{path}[{json.dumps(name)}]"


def shown(value: object) -> str:
    """A value as an error message shows what it got: 'ten', 12, true, null, an object, a list."""
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:39] + "…"
        return repr(text)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def parse_document(text: str, path: str) -> object:
    """The JSON document in ``text``; raises DocumentError saying where the JSON is wrong."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise DocumentError(path, "the JSON is nested too deeply") from None
    except ValueError as exc:
        raise DocumentError(path, f"not valid JSON: {exc}") from None


# ---------------------------------------------------------------------------------------------------------
# Avro: the JSON document turned into the values fastavro writes, checked against the schema on the way.


def _avro_type(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union"
    kind = schema.get("type")
    return kind if isinstance(kind, str) else "union" if isinstance(kind, list) else "record"


def _branch_name(schema: Any) -> str:
    """The name fastavro's tuple notation picks a union branch by: a named type's name, else its type."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        return str(schema["name"])
    return _avro_type(schema)


class _AvroWriter:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def resolve(self, schema: Any) -> Any:
        if isinstance(schema, str) and schema in self.named:
            return self.named[schema]
        if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)) and "logicalType" not in schema:
            return self.resolve(schema["type"])
        if isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] in self.named:
            return self.named[schema["type"]]
        return schema

    def value(self, schema: Any, data: object, path: str) -> object:
        schema = self.resolve(schema)
        if isinstance(schema, list):
            return self.union(schema, data, path)
        kind = _avro_type(schema)
        logical = schema.get("logicalType") if isinstance(schema, dict) else None
        if kind in ("record", "error"):
            return self.record(schema, data, path)
        if kind == "enum":
            symbols = schema.get("symbols") or []
            if not isinstance(data, str) or data not in symbols:
                raise DocumentError(
                    path, f"expected one of {', '.join(symbols)} (enum {schema['name']}), got {shown(data)}"
                )
            return data
        if kind == "array":
            if not isinstance(data, list):
                raise DocumentError(path, f"expected a list, got {shown(data)}")
            return [self.value(schema["items"], item, child(path, n)) for n, item in enumerate(data)]
        if kind == "map":
            if not isinstance(data, dict):
                raise DocumentError(path, f"expected an object (a map), got {shown(data)}")
            return {key: self.value(schema["values"], item, child(path, key)) for key, item in data.items()}
        if kind == "fixed":
            return self.fixed(schema, data, path, logical)
        return self.primitive(kind, logical, schema, data, path)

    def union(self, branches: list[Any], data: object, path: str) -> object:
        failures = []
        for branch in branches:
            try:
                return (_branch_name(self.resolve(branch)), self.value(branch, data, path))
            except DocumentError as exc:
                failures.append(exc)
        # Avro's own JSON encoding wraps a union's value in its branch's name: {"string": "x"}.
        if isinstance(data, dict) and len(data) == 1:
            ((name, inner),) = data.items()
            for branch in branches:
                resolved = self.resolve(branch)
                full = _branch_name(resolved)
                if name in (full, full.rsplit(".", 1)[-1]):
                    return (full, self.value(branch, inner, path))
        names = [_branch_name(self.resolve(b)) for b in branches]
        deepest = max(failures, key=lambda e: e.path.count(".") + e.path.count("["), default=None)
        if deepest is not None and deepest.path != path:
            raise deepest
        raise DocumentError(path, f"expected one of the union's types ({', '.join(names)}), got {shown(data)}")

    def record(self, schema: dict[str, Any], data: object, path: str) -> dict[str, object]:
        name = schema.get("name")
        if not isinstance(data, dict):
            raise DocumentError(path, f"expected an object (record {name}), got {shown(data)}")
        fields = schema.get("fields") or []
        known = {f["name"] for f in fields}
        for key in data:
            if key not in known:
                raise DocumentError(
                    child(path, key), f"record {name} has no such field (its fields: {', '.join(sorted(known))})"
                )
        out: dict[str, object] = {}
        for field in fields:
            field_name = field["name"]
            if field_name in data:
                out[field_name] = self.value(field["type"], data[field_name], child(path, field_name))
            elif "default" in field:
                out[field_name] = self.value(field["type"], field["default"], child(path, field_name))
            else:
                raise DocumentError(child(path, field_name), f"missing: a field of record {name} without a default")
        return out

    def fixed(self, schema: dict[str, Any], data: object, path: str, logical: object) -> object:
        size = int(schema.get("size", 0))
        if logical == "decimal":
            raw = _decimal_bytes(schema, data, path)
            if len(raw) > size:
                raise DocumentError(path, f"the decimal does not fit in {size} bytes (fixed {schema['name']})")
            fill = b"\xff" if raw and raw[0] & 0x80 else b"\x00"
            return fill * (size - len(raw)) + raw
        if logical == "uuid" and size == 16:
            return _uuid(data, path).bytes
        raw = _code_points(data, path)
        if len(raw) != size:
            raise DocumentError(path, f"expected {size} bytes (fixed {schema['name']}), got {len(raw)}")
        return raw

    def primitive(self, kind: str, logical: object, schema: Any, data: object, path: str) -> object:
        if kind == "null":
            if data is not None:
                raise DocumentError(path, f"expected null, got {shown(data)}")
            return None
        if kind == "boolean":
            if not isinstance(data, bool):
                raise DocumentError(path, f"expected true or false, got {shown(data)}")
            return data
        if kind == "string":
            if logical == "uuid":
                return str(_uuid(data, path))
            if not isinstance(data, str):
                raise DocumentError(path, f"expected a string, got {shown(data)}")
            return data
        if kind == "bytes":
            return _decimal_bytes(schema, data, path) if logical == "decimal" else _code_points(data, path)
        if kind in ("int", "long"):
            if isinstance(data, str) and logical in _TIME_READERS:
                return _TIME_READERS[logical](data, path)
            low, high = INT32 if kind == "int" else INT64
            number = _whole(data, path, kind, logical)
            if not low <= number <= high:
                raise DocumentError(path, f"{number} is out of range for {kind} ({low} to {high})")
            return number
        if kind in ("float", "double"):
            if isinstance(data, bool) or not isinstance(data, (int, float)):
                raise DocumentError(path, f"expected a number ({kind}), got {shown(data)}")
            real = float(data)
            if kind == "float" and math.isfinite(real) and abs(real) > FLOAT_MAX:
                raise DocumentError(path, f"{data} is out of range for float")
            return real
        raise DocumentError(path, f"the schema's type {kind!r} is not one Kazami writes")


def _whole(data: object, path: str, kind: str, logical: object) -> int:
    if (
        isinstance(data, bool)
        or not isinstance(data, (int, float))
        or (isinstance(data, float) and not data.is_integer())
    ):
        what = f"{kind}, {logical}" if isinstance(logical, str) else kind
        hint = {
            "date": " or a date such as '2026-11-27'",
            "time-millis": " or a time such as '12:30:00.250'",
            "time-micros": " or a time such as '12:30:00.250000'",
        }.get(
            str(logical), " or an ISO 8601 time such as '2026-11-27T12:30:00Z'" if "timestamp" in str(logical) else ""
        )
        raise DocumentError(path, f"expected a whole number ({what}){hint}, got {shown(data)}")
    return int(data)


def _code_points(data: object, path: str) -> bytes:
    if not isinstance(data, str):
        raise DocumentError(path, f"expected bytes as a string of code points U+0000-U+00FF, got {shown(data)}")
    try:
        return data.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise DocumentError(
            path, f"bytes are written one code point U+0000-U+00FF per byte; character {exc.start + 1} is not"
        ) from None


def _decimal_bytes(schema: Any, data: object, path: str) -> bytes:
    scale = int(schema.get("scale", 0)) if isinstance(schema, dict) else 0
    precision = schema.get("precision") if isinstance(schema, dict) else None
    if isinstance(data, bool) or not isinstance(data, (str, int, float)):
        raise DocumentError(path, f"expected a decimal such as '12.34', got {shown(data)}")
    try:
        number = Decimal(str(data).strip())
    except InvalidOperation:
        raise DocumentError(path, f"expected a decimal such as '12.34', got {shown(data)}") from None
    if not number.is_finite():
        raise DocumentError(path, f"expected a finite decimal, got {shown(data)}")
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if -exponent > scale:
        raise DocumentError(path, f"{data} has {-exponent} decimal places; the schema's scale is {scale}")
    unscaled = int(number.scaleb(scale))
    if isinstance(precision, int) and len(str(abs(unscaled))) > precision:
        raise DocumentError(path, f"{data} has more than the schema's {precision} digits (scale {scale})")
    return unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)


def _uuid(data: object, path: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(data)) if isinstance(data, str) else uuid.UUID("")
    except ValueError:
        raise DocumentError(
            path, f"expected a UUID such as '7f1c0000-0000-4000-8000-000000000001', got {shown(data)}"
        ) from None


def _micros(moment: datetime) -> int:
    delta = moment - (_EPOCH if moment.tzinfo is not None else _EPOCH_NAIVE)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _timestamp(unit: int, local: bool) -> Callable[[str, str], int]:
    def convert(text: str, path: str) -> int:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise DocumentError(
                path, f"expected an ISO 8601 time such as '2026-11-27T12:30:00Z', got {shown(text)}"
            ) from None
        if local and moment.tzinfo is not None:
            raise DocumentError(path, f"a local timestamp has no time zone, got {shown(text)}")
        if not local and moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        micros = _micros(moment)
        if micros % unit:
            raise DocumentError(
                path, f"{shown(text)} is more precise than the schema's {'milli' if unit == 1000 else 'micro'}seconds"
            )
        return micros // unit

    return convert


def _date(text: str, path: str) -> int:
    try:
        return date.fromisoformat(text.strip()).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        raise DocumentError(path, f"expected a date such as '2026-11-27', got {shown(text)}") from None


def _time_of_day(unit: int) -> Callable[[str, str], int]:
    def convert(text: str, path: str) -> int:
        try:
            moment = time.fromisoformat(text.strip())
        except ValueError:
            raise DocumentError(path, f"expected a time of day such as '12:30:00.250', got {shown(text)}") from None
        micros = ((moment.hour * 60 + moment.minute) * 60 + moment.second) * 1_000_000 + moment.microsecond
        if micros % unit:
            raise DocumentError(path, f"{shown(text)} is more precise than the schema's milliseconds")
        return micros // unit

    return convert


_TIME_READERS: dict[str, Callable[[str, str], int]] = {
    "date": _date,
    "time-millis": _time_of_day(1000),
    "time-micros": _time_of_day(1),
    "timestamp-millis": _timestamp(1000, False),
    "timestamp-micros": _timestamp(1, False),
    "local-timestamp-millis": _timestamp(1000, True),
    "local-timestamp-micros": _timestamp(1, True),
}


# ---------------------------------------------------------------------------------------------------------
# The three formats


@dataclass(frozen=True)
class Encoder:
    """A registered schema ready to encode documents: ``encode(document, path)`` gives the bytes after the
    wire-format header (Protobuf's message indexes included); ``messages``: a Protobuf schema's message names."""

    schema: RegisteredSchema
    encode: Callable[[object, str, str | None], bytes]
    messages: tuple[str, ...] = ()


def _avro_encoder(schema: RegisteredSchema, source: SchemaSource) -> Encoder:
    texts: dict[tuple[str, int], str] = {}
    _avro_references(schema, source, texts)
    named: dict[str, Any] = {}
    try:
        for text in texts.values():
            if text:
                fastavro.parse_schema(json.loads(text), named_schemas=named)
        parsed = fastavro.parse_schema(json.loads(schema.text), named_schemas=named)
    except Exception as exc:  # noqa: BLE001 - fastavro raises many kinds for a schema it cannot take
        raise SchemaUnusable(f"the Avro schema does not parse: {str(exc)[:300]}") from None
    writer = _AvroWriter(named)

    def encode(document: object, path: str, message: str | None = None) -> bytes:
        value = writer.value(parsed, document, path)
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, value)
        except (ValueError, TypeError, OverflowError) as exc:
            raise DocumentError(path, f"fastavro could not write it: {str(exc)[:300]}") from None
        return out.getvalue()

    return Encoder(schema, encode)


_PARSE_PREFIX = re.compile(r"Failed to parse (\w+) field: ")
_NO_FIELD = re.compile(r'Message type "([\w.]+)" has no field named "([^"]+)" at "([^"]*)"')


def protobuf_problem(text: str, path: str) -> DocumentError:
    """json_format's ParseError as a DocumentError naming the field ("Failed to parse a field: Failed to parse
    b field: ..." is ``value.a.b``)."""
    where = path
    while match := _PARSE_PREFIX.match(text):
        where = child(where, match.group(1))
        text = text[match.end() :]
    found = _NO_FIELD.search(text)
    if found:
        return DocumentError(child(where, found.group(2)), f"message {found.group(1)} has no such field")
    return DocumentError(where, text.split("\n", 1)[0].rstrip(".") or "not valid for the message")


def _message_names(proto: Any, prefix: str) -> list[tuple[str, list[int]]]:
    found = []
    for index, message in enumerate(proto):
        name = f"{prefix}{message.name}"
        found.append((name, [index]))
        found += [(n, [index, *rest]) for n, rest in _message_names(message.nested_type, name + ".")]
    return found


def _protobuf_encoder(schema: RegisteredSchema, source: SchemaSource) -> Encoder:
    try:
        compiled = protobuf.compile_schema(schema, source)
    except protobuf.ProtoSchemaError as exc:
        raise SchemaUnusable(f"the Protobuf schema does not compile: {exc}") from None
    package = f"{compiled.file.package}." if compiled.file.package else ""
    names = dict(_message_names(compiled.file.message_type, package))

    def encode(document: object, path: str, message: str | None = None) -> bytes:
        if not names:
            raise SchemaUnusable("the Protobuf schema defines no message")
        wanted = message or next(iter(names))
        indexes = names.get(wanted) or names.get(package + wanted)
        if indexes is None:
            raise DocumentError(path, f"the schema has no message {wanted} (its messages: {', '.join(names)})")
        full = compiled.message_name(indexes)
        if not isinstance(document, dict):
            raise DocumentError(path, f"expected an object (message {full}), got {shown(document)}")
        cls = message_factory.GetMessageClass(compiled.pool.FindMessageTypeByName(full))
        try:
            parsed = json_format.ParseDict(document, cls(), ignore_unknown_fields=False)
        except json_format.ParseError as exc:
            raise protobuf_problem(str(exc), path) from None
        except (ValueError, TypeError, RecursionError) as exc:
            raise DocumentError(path, str(exc)[:300] or "not valid for the message") from None
        return wire.write_indexes(indexes) + parsed.SerializeToString()

    return Encoder(schema, encode, tuple(names))


def _json_problem(error: Any, path: str) -> DocumentError:
    where = path
    for part in error.absolute_path:
        where = child(where, part)
    if error.validator == "type":
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        article = "an" if wanted[:1] in "aeiou" else "a"
        return DocumentError(where, f"expected {article} {wanted}, got {shown(error.instance)}")
    if error.validator == "required":
        missing = [
            name for name in error.validator_value if isinstance(error.instance, dict) and name not in error.instance
        ]
        if missing:
            return DocumentError(child(where, missing[0]), "missing: a required property")
    return DocumentError(where, error.message[:300])


def _json_encoder(schema: RegisteredSchema, source: SchemaSource) -> Encoder:
    try:
        compiled = json_schema.compile_schema(schema, source)
    except json_schema.JsonSchemaError as exc:
        raise SchemaUnusable(f"the JSON schema cannot be used: {exc}") from None

    def encode(document: object, path: str, message: str | None = None) -> bytes:
        from jsonschema.exceptions import best_match

        try:
            error = best_match(compiled.validator.iter_errors(document))
        except RecursionError:
            raise DocumentError(path, "the document is nested too deeply to check") from None
        except Exception as exc:  # noqa: BLE001 - an unresolvable $ref, a schema jsonschema cannot use
            raise SchemaUnusable(f"the document could not be checked against its schema: {str(exc)[:300]}") from None
        if error is not None:
            raise _json_problem(error, path)
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    return Encoder(schema, encode)


class SchemaUnusable(InvalidInput):
    """A registered schema the console cannot encode with (it does not parse or compile); the message says why."""


def compile_encoder(schema: RegisteredSchema, source: SchemaSource) -> Encoder:
    """An Encoder for ``schema`` (references fetched from ``source``); raises SchemaUnusable, RegistryError."""
    if schema.schema_type == AVRO:
        return _avro_encoder(schema, source)
    if schema.schema_type == PROTOBUF:
        return _protobuf_encoder(schema, source)
    if schema.schema_type == JSON_SCHEMA:
        return _json_encoder(schema, source)
    raise SchemaUnusable(f"schema type {schema.schema_type} is not one Kazami writes")


@dataclass(frozen=True)
class Encoded:
    """A document in the wire format, with the schema it was written with (and, for Protobuf, its message)."""

    data: bytes
    schema: RegisteredSchema
    message: str | None = None


class SchemaEncoder:
    """Encodes documents with the schemas ``source`` holds, by subject and version; compiled schemas are kept per
    id (an id never changes its schema). Thread-safe; keep one per registry."""

    def __init__(self, source: SchemaSource) -> None:
        self.source = source
        self._compiled: dict[int, Encoder] = {}
        self._lock = threading.Lock()

    def encoder(self, schema: RegisteredSchema) -> Encoder:
        if schema.id is None:
            return compile_encoder(schema, self.source)
        with self._lock:
            kept = self._compiled.get(schema.id)
        if kept is not None:
            return kept
        found = compile_encoder(schema, self.source)
        with self._lock:
            if len(self._compiled) >= MAX_KEPT:
                self._compiled.clear()
            self._compiled[schema.id] = found
        return found

    def encode(
        self, subject: str, version: int | str, document: object, path: str, message: str | None = None
    ) -> Encoded:
        """``document`` in the wire format of ``subject``'s ``version`` (a number or "latest"). Raises
        DocumentError (the field that is wrong), SchemaUnusable, RegistryError (unknown subject or version, the
        registry down)."""
        schema = self.source.schema_by_subject(subject, version)
        if schema.id is None:
            raise SchemaUnusable(f"the registry gave no id for {subject} version {version}")
        encoder = self.encoder(schema)
        body = encoder.encode(document, path, message)
        chosen = (
            (message or (encoder.messages[0] if encoder.messages else None)) if schema.schema_type == PROTOBUF else None
        )
        return Encoded(wire.frame(schema.id, body), schema, chosen)
