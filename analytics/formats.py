"""Topics whose records are in a schema registry's wire format, read decoded by the Spark jobs.

A record in the Confluent wire format is a magic byte 0, a 4-byte schema id, then Avro, Protobuf (after its
message indexes) or JSON Schema-checked JSON. Before Spark starts, :func:`plan_formats` (driver side, plain
Python) samples the first and last records of each topic's range; a topic whose records are framed gets the
schemas it uses from the registry: the ids seen, and the latest versions of the subject ``<topic>-value``. Avro
schemas are kept as text, Protobuf ones compiled (broker.schemas.protobuf) into descriptors shipped with the
job, so Spark's executors never call the registry. A registry that is missing or does not answer stops the
job there, with the reason, before Spark starts.

In Spark, :func:`decode` replaces each record's ``value`` with the decoded document as JSON text, so the
reports read it as they read JSON topics (analytics.events) and give the same figures:

- Avro: Spark's own ``from_avro`` (spark-avro) on the bytes after the 5-byte header, with the id's schema as
  the writer's and the subject's latest version as the reader's, so records written with older versions
  are read into the latest one (Avro's schema resolution: a new field takes its default);
- Protobuf: a Python step (spark-protobuf is not on Maven Central for Spark 4.2.0) reading the message the
  indexes name with the compiled descriptors, as protobuf's JSON mapping with the .proto's field names;
- JSON Schema: the JSON after the header.

Records that are not framed are read as they are (JSON); a framed record whose schema id the plan does not
hold, or whose bytes do not decode, becomes no document and counts as ``not_json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.errors import KazamiError
from broker.messages.ranges import TopicRanges
from broker.schemas import wire
from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF, RegisteredSchema, RegistryError, SchemaSource

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from broker.client.connection import ClusterConnection

SAMPLE = 20  # records read at the start and at the end of each sampled partition
SAMPLED_PARTITIONS = 8  # of each topic
VERSIONS = 10  # of the subject <topic>-value, the latest, read beside the ids sampled
SUBJECT_NOT_FOUND = 40401
KIND_NAMES = {AVRO: "Avro", PROTOBUF: "Protobuf", JSON_SCHEMA: "JSON Schema"}

# Reads the records of (topic, partition) from an offset: at most ``limit`` values. The console's and the
# command line's is :func:`page_values` over the cluster's connection; tests may pass their own.
Sampler = Callable[[str, int, int, int], list[bytes | None]]


class SchemaUnavailable(KazamiError):
    """A topic holds records in a registry's wire format and there is no registry to read their schemas from,
    or it does not answer: the job stops before Spark starts."""


@dataclass(frozen=True)
class TopicSchema:
    """One schema id a topic's records use, as the job reads it."""

    id: int
    schema_type: str  # AVRO, PROTOBUF or JSON_SCHEMA
    subject: str | None = None
    version: int | None = None
    writer: str = ""  # Avro: the id's schema
    reader: str = ""  # Avro: the schema its records are read into (the subject's latest version)
    reader_version: int | None = None
    descriptors: bytes = b""  # Protobuf: a FileDescriptorSet, each file after what it imports
    main: str = ""  # Protobuf: the name of the registered file in ``descriptors``

    def describe(self) -> str:
        text = f"{KIND_NAMES.get(self.schema_type, self.schema_type)}, schema id {self.id}"
        if self.subject:
            text += f", subject {self.subject}" + (f" v{self.version}" if self.version is not None else "")
        if self.schema_type == AVRO and self.reader != self.writer and self.reader_version is not None:
            text += f" (read as v{self.reader_version})"
        return text


@dataclass(frozen=True)
class TopicFormat:
    """How a topic's records are read: as JSON (no schemas), or decoded with ``schemas``."""

    topic: str
    schemas: tuple[TopicSchema, ...] = ()
    sampled: int = 0  # records sampled
    framed: int = 0  # of them in the wire format
    skipped: tuple[str, ...] = ()  # schema ids the job cannot read, with why

    def describe(self) -> str:
        if not self.schemas and not self.framed:
            return f"{self.topic}: JSON"
        used = "; ".join(s.describe() for s in self.schemas) or "no readable schema"
        text = f"{self.topic}: {used}"
        if self.skipped:
            text += ". Not read (their records count as not_json): " + "; ".join(self.skipped)
        return text


@dataclass(frozen=True)
class Formats:
    """The formats of a job's topics (a topic not named here is read as JSON)."""

    topics: dict[str, TopicFormat] = field(default_factory=dict)

    @property
    def framed(self) -> bool:
        return any(t.schemas or t.framed for t in self.topics.values())

    def notes(self) -> list[str]:
        """What was used, for the job's page (nothing when every topic is plain JSON)."""
        if not self.framed:
            return []
        return ["Read as " + " | ".join(t.describe() for t in self.topics.values()) + "."]


# ---------------------------------------------------------------- planning (driver side, no Spark)


def page_values(conn: ClusterConnection) -> Sampler:
    """A sampler reading pages of the topic through the console's own reader."""
    from broker.messages.read import get_page

    def read(topic: str, partition: int, offset: int, limit: int) -> list[bytes | None]:
        page = get_page(conn, topic, partition, offset=offset, limit=limit)
        return [m.value for m in page.messages if not m.is_marker]

    return read


def plan_formats(ranges: TopicRanges, sampler: Sampler, registry: SchemaSource | None) -> Formats:
    """The format of each topic of ``ranges``, from a sample of its records (the first and last SAMPLE of up
    to SAMPLED_PARTITIONS partitions) and, for framed ones, the registry. Raises SchemaUnavailable (no
    registry, or it does not answer)."""
    where = str(getattr(registry, "where", "") or "the schema registry")
    where = where[:1].lower() + where[1:]
    parts: dict[str, list[Any]] = {}
    for p in ranges.partitions:
        if p.records > 0:
            parts.setdefault(p.topic, []).append(p)
    found = {}
    for topic, partitions in parts.items():
        values: list[bytes | None] = []
        for p in partitions[:SAMPLED_PARTITIONS]:
            values += sampler(topic, p.partition, p.start, min(SAMPLE, p.records))
            if p.records > SAMPLE:
                tail = max(p.start + SAMPLE, p.end - SAMPLE)
                values += sampler(topic, p.partition, tail, p.end - tail)
        found[topic] = _topic_format(topic, values, registry, where)
    return Formats(found)


def _topic_format(topic: str, values: list[bytes | None], registry: SchemaSource | None, where: str) -> TopicFormat:
    ids = sorted({wire.split(v)[0] for v in values if v is not None and wire.is_framed(v)})
    framed = sum(1 for v in values if wire.is_framed(v))
    if not ids:
        return TopicFormat(topic, sampled=len(values))
    named = ", ".join(str(i) for i in ids)
    if registry is None:
        raise SchemaUnavailable(
            f"Topic {topic!r} holds records in a schema registry's wire format (schema id {named}), and no schema "
            "registry is configured for this cluster (SCHEMA_REGISTRY_URL, or schema_registry in the clusters "
            "file): the job cannot read them."
        )
    try:
        return _with_registry(topic, ids, len(values), framed, registry)
    except RegistryError as exc:
        raise SchemaUnavailable(
            f"Topic {topic!r} holds records in a schema registry's wire format (schema id {named}), and {where} "
            f"could not give their schemas: {exc}. The job did not start."
        ) from None


def _with_registry(topic: str, ids: list[int], sampled: int, framed: int, registry: SchemaSource) -> TopicFormat:
    subject = f"{topic}-value"
    versions: dict[int, RegisteredSchema] = {}
    # Its latest versions (records beyond the sample may use them); older ids only when sampled.
    for version in _versions(registry, subject)[-VERSIONS:]:
        schema = registry.schema_by_subject(subject, version)
        if schema.id is not None:
            versions[schema.id] = schema
    latest = max(versions.values(), key=lambda s: s.version or 0) if versions else None
    schemas, skipped = [], []
    for schema_id in sorted(set(ids) | set(versions)):
        mine = versions.get(schema_id)
        try:
            registered = mine or registry.schema_by_id(schema_id)
        except RegistryError as exc:
            if exc.status == 0:
                raise
            skipped.append(f"schema id {schema_id}: {exc}")
            continue
        sub: str | None = subject if mine else registered.subject
        used = mine.version if mine else registered.version
        try:
            schemas.append(_readable(registered, sub, used, latest if mine else None, registry))
        except ValueError as exc:
            skipped.append(f"schema id {schema_id}: {exc}")
    return TopicFormat(topic, tuple(schemas), sampled, framed, tuple(skipped))


def _versions(registry: SchemaSource, subject: str) -> list[int]:
    versions = getattr(registry, "versions", None)
    if versions is None:
        return []
    try:
        return [int(v) for v in versions(subject)]
    except RegistryError as exc:
        if exc.code == SUBJECT_NOT_FOUND or exc.status == 404:
            return []
        raise


def _readable(
    schema: RegisteredSchema,
    subject: str | None,
    version: int | None,
    latest: RegisteredSchema | None,
    registry: SchemaSource,
) -> TopicSchema:
    """``schema`` as the job reads it. Raises ValueError for one it cannot."""
    assert schema.id is not None
    if schema.schema_type == AVRO:
        writer = avro_text(schema, registry)
        reader, reader_version = writer, version
        if latest is not None and latest.schema_type == AVRO:
            reader, reader_version = avro_text(latest, registry), latest.version
        return TopicSchema(
            schema.id, AVRO, subject, version, writer=writer, reader=reader, reader_version=reader_version
        )
    if schema.schema_type == PROTOBUF:
        from broker.schemas.protobuf import ProtoSchemaError, compile_schema

        try:
            compiled = compile_schema(schema, registry)
        except ProtoSchemaError as exc:
            raise ValueError(str(exc)) from None
        return TopicSchema(
            schema.id,
            PROTOBUF,
            subject,
            version,
            descriptors=_descriptor_set(compiled.file, compiled.pool),
            main=compiled.file.name,
        )
    if schema.schema_type == JSON_SCHEMA:
        return TopicSchema(schema.id, JSON_SCHEMA, subject, version)
    raise ValueError(f"a schema of type {schema.schema_type}")


MAX_REFERENCE_DEPTH = 20
NAMED = ("record", "enum", "fixed")


def avro_text(schema: RegisteredSchema, source: SchemaSource, depth: int = 0) -> str:
    """``schema``'s text with the named types of its references (fetched by subject and version, theirs too)
    written in where first used, so that it stands alone as Spark's from_avro needs. Raises ValueError when a
    reference cannot be fetched or does not parse, RegistryError when the registry does not answer."""
    if not schema.references:
        return schema.text
    if depth > MAX_REFERENCE_DEPTH:
        raise ValueError(f"Avro references nest more than {MAX_REFERENCE_DEPTH} deep")
    definitions: dict[str, Any] = {}
    for reference in schema.references:
        try:
            referenced = source.schema_by_subject(reference.subject, reference.version)
        except RegistryError as exc:
            if exc.status == 0:
                raise
            raise ValueError(f"its reference {reference.subject} v{reference.version}: {exc}") from None
        definitions[reference.name] = _parsed(avro_text(referenced, source, depth + 1), reference.subject)
    written: set[str] = set()

    def inline(node: Any, namespace: str) -> Any:
        if isinstance(node, str):
            full = node if "." in node or not namespace else f"{namespace}.{node}"
            for name in (full, node):
                if name in definitions and name not in written:
                    written.add(name)
                    return definitions[name]
            return node
        if isinstance(node, list):
            return [inline(item, namespace) for item in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") in NAMED:
            name = str(node.get("name", ""))
            namespace = name.rsplit(".", 1)[0] if "." in name else str(node.get("namespace", namespace) or "")
            written.add(f"{namespace}.{name}" if namespace and "." not in name else name)
        out = dict(node)
        if "type" in out:
            out["type"] = inline(out["type"], namespace)
        for key in ("items", "values"):
            if key in out:
                out[key] = inline(out[key], namespace)
        if isinstance(out.get("fields"), list):
            out["fields"] = [
                {**f, "type": inline(f.get("type"), namespace)} if isinstance(f, dict) else f for f in out["fields"]
            ]
        return out

    return json.dumps(inline(_parsed(schema.text, "the schema"), ""))


def _parsed(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"{what} is not JSON") from None


def _descriptor_set(main: Any, pool: Any) -> bytes:
    """The FileDescriptorSet of ``main`` and every file it imports, found in ``pool``, each after its imports."""
    from google.protobuf import descriptor_pb2

    ordered: list[Any] = []
    seen: set[str] = set()

    def add(proto: Any) -> None:
        if proto.name in seen:
            return
        seen.add(proto.name)
        for name in proto.dependency:
            dependency = descriptor_pb2.FileDescriptorProto()
            pool.FindFileByName(name).CopyToProto(dependency)
            add(dependency)
        ordered.append(proto)

    add(main)
    return descriptor_pb2.FileDescriptorSet(file=ordered).SerializeToString()


# ---------------------------------------------------------------- reading (Spark)


def framed_column() -> Column:
    """Whether the record in ``value`` is in the wire format (magic byte 0 and a schema id)."""
    from pyspark.sql import functions as F

    value = F.col("value")
    return F.coalesce((F.length(value) >= wire.HEADER) & (F.hex(F.substring(value, 1, 1)) == F.lit("00")), F.lit(False))


def schema_id_column() -> Column:
    """The schema id of a framed record in ``value`` (null for others)."""
    from pyspark.sql import functions as F

    return F.when(framed_column(), F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("int"))


def _body() -> Column:
    from pyspark.sql import functions as F

    return F.expr(f"substring(value, {wire.HEADER + 1})")


def _avro(schema: TopicSchema) -> Column:
    from pyspark.sql.avro.functions import from_avro

    options = {"mode": "PERMISSIVE"}
    if schema.reader and schema.reader != schema.writer:
        options["avroSchema"] = schema.reader
    return from_avro(_body(), schema.writer, options)


def _is_record(text: str) -> bool:
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("type") == "record"


def _as_json(schema: TopicSchema) -> Column:
    """The record's document as JSON text, read with ``schema``."""
    from pyspark.sql import functions as F

    if schema.schema_type == AVRO:
        decoded = _avro(schema)
        if not _is_record(schema.reader or schema.writer):
            return decoded.cast("string")  # any other Avro type as Spark casts it to text
        # A record becomes a JSON object. Bytes that do not decode give a record of nulls in PERMISSIVE mode
        # (null fields are left out of the JSON): no document.
        text = F.to_json(decoded)
        return F.when(text != F.lit("{}"), text)
    if schema.schema_type == PROTOBUF:
        return _protobuf_udf(schema)(_body())
    return _body().cast("string")


def decode(records: DataFrame, formats: Formats | None) -> DataFrame:
    """Kafka records (the Kafka source's columns) with ``value`` as text: the decoded document as JSON for a
    framed record of a schema in ``formats`` (null when it does not decode or its id is not there), the value
    as it is otherwise; ``size`` the key's and value's bytes as written, ``schema_id`` the record's (null when
    not framed). Without framed topics, ``records`` as they are."""
    from pyspark.sql import functions as F

    if formats is None or not formats.framed:
        return records
    sid, topic = schema_id_column(), F.col("topic")
    text = F.when(~framed_column(), F.col("value").cast("string"))
    for name, fmt in formats.topics.items():
        for schema in fmt.schemas:
            text = text.when((topic == name) & (sid == schema.id), _as_json(schema))
    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    return records.withColumn("size", size).withColumn("schema_id", sid).withColumn("value", text)


def table(records: DataFrame, formats: Formats | None, topic: str) -> DataFrame:
    """``topic``'s records as a table for SQL: ``partition``, ``offset``, ``timestamp`` (ms), ``key`` and
    ``value`` as text (``value`` the decoded document as JSON text), ``schema_id``, and ``fields``: the decoded
    document as a struct when the topic's schemas are Avro read into one schema (its latest version), else
    null; and ``headers`` as the Kafka source gives them when ``records`` have them."""
    from pyspark.sql import functions as F

    mine = records.where(F.col("topic") == topic)
    fmt = (formats.topics.get(topic) if formats else None) or TopicFormat(topic)
    readers = {s.reader for s in fmt.schemas}
    struct: Column = F.lit(None)
    if fmt.schemas and all(s.schema_type == AVRO for s in fmt.schemas) and len(readers) == 1:
        sid = schema_id_column()
        cases = F.when(sid == fmt.schemas[0].id, _avro(fmt.schemas[0]))
        for schema in fmt.schemas[1:]:
            cases = cases.when(sid == schema.id, _avro(schema))
        struct = cases
    with_fields = mine.withColumn("fields", struct)
    decoded = decode(with_fields, Formats({topic: fmt}))
    if "schema_id" not in decoded.columns:
        decoded = decoded.withColumn("schema_id", F.lit(None).cast("int"))
    extra = ["headers"] if "headers" in decoded.columns else []
    return decoded.select(
        "partition",
        "offset",
        "timestamp",
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        "schema_id",
        "fields",
        *extra,
    )


# ---------------------------------------------------------------- Protobuf, in Spark's Python workers

_PROTO_CACHE: dict[tuple[int, bytes], Any] = {}


def _proto_reader(schema_id: int, descriptors: bytes, main: str) -> Any:
    """The compiled schema (broker.schemas.protobuf.ProtoSchema) of ``descriptors``, built once per worker."""
    key = (schema_id, descriptors)
    reader = _PROTO_CACHE.get(key)
    if reader is None:
        from google.protobuf import descriptor_pb2, descriptor_pool

        from broker.schemas.protobuf import ProtoSchema

        files = descriptor_pb2.FileDescriptorSet()
        files.ParseFromString(descriptors)
        pool = descriptor_pool.DescriptorPool()
        for proto in files.file:
            pool.AddSerializedFile(proto.SerializeToString())
        reader = ProtoSchema(next(p for p in files.file if p.name == main), pool)
        _PROTO_CACHE[key] = reader
    return reader


def read_protobuf(schema_id: int, descriptors: bytes, main: str, body: bytes | None) -> str | None:
    """The message in ``body`` (message indexes, then the message) as JSON text, or None when it does not read."""
    if body is None:
        return None
    try:
        indexes, message = wire.read_indexes(bytes(body))
        return json.dumps(_proto_reader(schema_id, descriptors, main).read(indexes, message), separators=(",", ":"))
    except (ValueError, KeyError, StopIteration):
        return None


def _protobuf_udf(schema: TopicSchema) -> Callable[[Column], Column]:
    from pyspark.sql import functions as F

    schema_id, descriptors, main = schema.id, schema.descriptors, schema.main

    def read(body: bytes | None) -> str | None:
        return read_protobuf(schema_id, descriptors, main, body)

    udf: Callable[[Column], Column] = F.udf(read, "string", useArrow=False)
    return udf
