"""Records in the wire format read with the schemas a registry holds: Avro, Protobuf or JSON Schema.

:class:`RecordDecoder` turns framed bytes into a :class:`SchemaRecord`: the kind (``avro``, ``protobuf``,
``json_schema``), the value read, and the schema reference ``{"id", "subject", "version", "type"}``. An
unknown id, a registry that does not answer, a schema that does not compile, bytes that do not read with it:
kind ``binary`` with the reason, never an exception. Compiled schemas are kept per id (an id never changes
its schema); a failed look-up is kept a short while, so a registry that is down is asked once for a page of
records, not once a record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.schemas import avro, json_schema, protobuf, wire
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegisteredSchema, RegistryError, SchemaSource

KINDS = {AVRO: "avro", PROTOBUF: "protobuf", JSON_SCHEMA: "json_schema"}
NOT_CONFIGURED = "no schema registry is configured for this cluster"
UNKNOWN_ID_SECONDS = 30.0  # how long an id the registry does not know is not asked again
DOWN_SECONDS = 5.0  # how long a registry that did not answer is not asked again
MAX_KEPT = 10_000  # compiled schemas kept per decoder
MAX_REFERENCES = 100  # schemas one Avro schema may reference, all levels together


@dataclass(slots=True)
class SchemaRecord:
    """A framed key or value read with its registered schema. ``value`` is what the schema read: fastavro's
    value for Avro (bytes as bytes: see broker.schemas.avro.plain), a dict for Protobuf, the JSON document
    for JSON Schema; None for binary. ``error``: why the bytes are binary, or why a JSON Schema document
    fails its schema (the document is still given). ``schema``: {"id", "subject", "version", "type"}."""

    kind: str
    value: object
    schema: dict[str, object]
    error: str | None = None


@dataclass(frozen=True)
class _Compiled:
    schema_type: str
    subject: str | None
    version: int | None
    read: Callable[[bytes], tuple[object, str | None]]
    uses: tuple[tuple[str, int], ...] = ()  # every (subject, version) registering the id, when the registry told

    references: dict[str | None, dict[str, object]] = field(default_factory=dict)

    def reference(self, schema_id: int, hint: str | None) -> dict[str, object]:
        """{"id", "subject", "version", "type"}: the subject-version named is ``hint``'s (the topic's own subject)
        when the id is registered under it too (one schema can serve a topic's keys and values), else the one the
        registry named first. One dict per hint, shared by the records read (do not change it)."""
        found = self.references.get(hint)
        if found is None:
            subject, version = self.subject, self.version
            for used, number in self.uses:
                if used == hint:
                    subject, version = used, number
            if len(self.references) >= 64:
                self.references.clear()
            found = self.references[hint] = {
                "id": schema_id,
                "subject": subject,
                "version": version,
                "type": self.schema_type,
            }
        return found


@dataclass(frozen=True)
class _Failure:
    reason: str
    until: float  # time.monotonic(); inf: for good (the schema for an id never changes)
    subject: str | None = None
    version: int | None = None
    schema_type: str | None = None


class _Unreadable(Exception):
    """Bytes that do not read with their schema."""


def _avro_references(schema: RegisteredSchema, source: SchemaSource, found: dict[tuple[str, int], str]) -> None:
    """The texts of the schemas ``schema`` references, recursively, each after those it references."""
    for reference in schema.references:
        key = (reference.subject, reference.version)
        if key in found:
            continue
        if len(found) >= MAX_REFERENCES:
            raise avro.SchemaError(f"the schema references more than {MAX_REFERENCES} schemas")
        try:
            referenced = source.schema_by_subject(reference.subject, reference.version)
        except RegistryError as exc:
            raise avro.SchemaError(
                f"its reference {reference.name} ({reference.subject} version {reference.version}) could not be "
                f"fetched: {exc}"
            ) from None
        found[key] = ""  # taken: a reference back to it is not fetched again
        _avro_references(referenced, source, found)
        del found[key]
        found[key] = referenced.text  # after what it references


def _avro_reader(schema: RegisteredSchema, source: SchemaSource) -> Callable[[bytes], tuple[object, str | None]]:
    texts: dict[tuple[str, int], str] = {}
    _avro_references(schema, source, texts)
    parsed = avro.parse_avro_schema(schema.text, tuple(text for text in texts.values() if text))

    def read(body: bytes) -> tuple[object, str | None]:
        try:
            return avro.read_avro(body, parsed), None
        except avro.AvroMismatch as exc:
            raise _Unreadable(f"not valid Avro for schema {schema.id}: {exc}") from None
        except RecursionError:
            raise _Unreadable(f"not valid Avro for schema {schema.id}: the value is nested too deeply") from None

    return read


def _protobuf_reader(schema: RegisteredSchema, source: SchemaSource) -> Callable[[bytes], tuple[object, str | None]]:
    compiled = protobuf.compile_schema(schema, source)

    def read(body: bytes) -> tuple[object, str | None]:
        try:
            indexes, message = wire.read_indexes(body)
            return compiled.read(indexes, message), None
        except (wire.WireError, protobuf.ProtoSchemaError) as exc:
            raise _Unreadable(f"not valid Protobuf for schema {schema.id}: {exc}") from None
        except RecursionError:
            raise _Unreadable(f"not valid Protobuf for schema {schema.id}: nested too deeply") from None

    return read


def _json_reader(schema: RegisteredSchema, source: SchemaSource) -> Callable[[bytes], tuple[object, str | None]]:
    compiled = json_schema.compile_schema(schema, source)

    def read(body: bytes) -> tuple[object, str | None]:
        try:
            return compiled.read(body)
        except json_schema.JsonSchemaError as exc:
            raise _Unreadable(f"not valid JSON for schema {schema.id}: {exc}") from None

    return read


def _uses(source: SchemaSource, schema: RegisteredSchema) -> list[tuple[str, int]]:
    """Where the registry says an id is registered: every (subject, version), asked of ``source.subjects_of_id``
    when it has one; a failure leaves them unknown."""
    lookup: Any = getattr(source, "subjects_of_id", None)
    if lookup is None or schema.id is None:
        return []
    try:
        found = list(lookup(schema.id))
    except RegistryError:
        return []
    pairs = []
    for item in found:
        if isinstance(item, dict):
            pairs.append((item.get("subject"), item.get("version")))
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            pairs.append((item[0], item[1]))
        else:
            pairs.append((getattr(item, "subject", None), getattr(item, "version", None)))
    return [(str(s), int(v)) for s, v in pairs if s is not None and isinstance(v, int)]


class RecordDecoder:
    """Reads framed records with the schemas ``source`` gives (None: no registry configured, every framed
    record is binary with that reason). Thread-safe; keep one per registry, so its compiled schemas last."""

    def __init__(self, source: SchemaSource | None, not_configured: str = NOT_CONFIGURED) -> None:
        self.source = source
        self.not_configured = not_configured
        self._compiled: dict[int, _Compiled | _Failure] = {}
        self._lock = threading.Lock()
        self._compiling: dict[int, threading.Lock] = {}
        self._down_until = 0.0
        self._down_reason = ""

    def read(self, raw: bytes, subject_hint: str | None = None) -> SchemaRecord:
        """``raw`` read with its registered schema; kind binary with the reason when it cannot be. ``subject_hint``
        (``<topic>-key`` / ``<topic>-value``): the subject to name when the id is registered under several."""
        try:
            schema_id, body = wire.split(raw)
        except wire.WireError as exc:
            return SchemaRecord("binary", None, {}, str(exc))
        if self.source is None:
            reference: dict[str, object] = {"id": schema_id, "subject": None, "version": None, "type": None}
            return SchemaRecord("binary", None, reference, f"schema id {schema_id}: {self.not_configured}")
        compiled = self._schema(schema_id)
        if isinstance(compiled, _Failure):
            reference = {
                "id": schema_id,
                "subject": compiled.subject,
                "version": compiled.version,
                "type": compiled.schema_type,
            }
            return SchemaRecord("binary", None, reference, compiled.reason)
        reference = compiled.reference(schema_id, subject_hint)
        try:
            value, problem = compiled.read(body)
        except _Unreadable as exc:
            return SchemaRecord("binary", None, reference, str(exc))
        return SchemaRecord(KINDS[compiled.schema_type], value, reference, problem)

    def _schema(self, schema_id: int) -> _Compiled | _Failure:
        kept = self._compiled.get(schema_id)
        if isinstance(kept, _Compiled):
            return kept
        now = time.monotonic()
        if kept is not None and kept.until > now:
            return kept
        if self._down_until > now:
            return _Failure(f"schema id {schema_id}: {self._down_reason}", self._down_until)
        with self._lock:
            lock = self._compiling.setdefault(schema_id, threading.Lock())
        with lock:  # one fetch and compile per id, however many threads read its records
            kept = self._compiled.get(schema_id)
            if isinstance(kept, _Compiled) or (kept is not None and kept.until > time.monotonic()):
                return kept
            if self._down_until > time.monotonic():
                return _Failure(f"schema id {schema_id}: {self._down_reason}", self._down_until)
            result = self._fetch(schema_id)
            with self._lock:
                if len(self._compiled) >= MAX_KEPT:
                    self._compiled.clear()
                self._compiled[schema_id] = result
                self._compiling.pop(schema_id, None)
            return result

    def _fetch(self, schema_id: int) -> _Compiled | _Failure:
        try:
            return self._fetch_and_compile(schema_id)
        except Exception as exc:  # noqa: BLE001 - a page shows the record as bytes with the reason, never fails
            reason = f"schema id {schema_id} could not be read: {type(exc).__name__}: {str(exc)[:300]}"
            return _Failure(reason, time.monotonic() + DOWN_SECONDS)

    def _fetch_and_compile(self, schema_id: int) -> _Compiled | _Failure:
        assert self.source is not None
        try:
            schema = self.source.schema_by_id(schema_id)
        except RegistryError as exc:
            if exc.status == 404 or exc.code in (40403, 40401):
                return _Failure(
                    f"schema id {schema_id} is not in the registry: {exc}", time.monotonic() + UNKNOWN_ID_SECONDS
                )
            reason = f"schema id {schema_id}: the schema registry answered with an error: {exc}"
            if exc.status == 0 or exc.status >= 500:  # down: ask nothing of it for a few seconds
                reason = f"schema id {schema_id}: the schema registry did not answer: {exc}"
                self._down_until = time.monotonic() + DOWN_SECONDS
                self._down_reason = f"the schema registry did not answer: {exc}"
            return _Failure(reason, time.monotonic() + DOWN_SECONDS)
        uses = _uses(self.source, schema)
        subject, version = (
            (schema.subject, schema.version) if schema.subject is not None else (min(uses) if uses else (None, None))
        )
        kind = schema.schema_type
        try:
            if kind == AVRO:
                reader = _avro_reader(schema, self.source)
            elif kind == PROTOBUF:
                reader = _protobuf_reader(schema, self.source)
            elif kind == JSON_SCHEMA:
                reader = _json_reader(schema, self.source)
            else:
                return _Failure(f"schema id {schema_id} has a type Kazami cannot read: {kind}", float("inf"))
        except (avro.SchemaError, protobuf.ProtoSchemaError, json_schema.JsonSchemaError) as exc:
            # A reference that could not be fetched may be fetched later; a schema that does not parse never will.
            until = time.monotonic() + DOWN_SECONDS if "could not be fetched" in str(exc) else float("inf")
            return _Failure(
                f"schema id {schema_id} ({KINDS.get(kind, kind)}) does not compile: {exc}",
                until,
                subject,
                version,
                kind,
            )
        return _Compiled(kind, subject, version, reader, tuple(uses))
