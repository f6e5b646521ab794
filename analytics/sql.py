"""SQL over topics: a query that only reads, checked before Spark sees it, over each topic it names as a table.

A topic is a table named by its name in backquotes (```page-views```), with the columns ``partition``,
``offset``, ``timestamp`` (a timestamp, UTC), ``key`` and ``value`` as text (the value of a record in a schema
registry's wire format as its decoded document in JSON), ``headers`` (an array of ``key``/``value`` text pairs)
and ``fields``: the value's JSON document as a struct, its fields and types inferred from a sample of the topic's
values (:func:`infer_schema`) or, for Avro records of one schema, that schema's.

:func:`check_sql` takes only one statement that reads: a query (``SELECT``, ``WITH``, set operations, ``VALUES``)
over topics and its own named subqueries. It refuses, with a sentence saying why, anything that writes or
changes anything (DML, DDL, ``SET``, ``CACHE``, ``ADD JAR``...), tables of other sources (files such as
``parquet.`/path```, catalogs, table-valued functions other than ``range``), functions that reach outside the
query (``reflect``, ``java_method``, script ``TRANSFORM``...). What Spark runs is the checked query written
again from its parsed form, not the text as given, so that what was checked is what runs; the job's Spark
session also has running SQL on files and SQL scripting turned off.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from broker.errors import InvalidInput

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from analytics.formats import Formats, Sampler
    from analytics.runner import JobResult, Progress
    from broker.messages.ranges import PartitionRange, TopicRanges

MAX_LENGTH = 20_000  # characters of a query
# Functions that reach outside the query: Java methods, files, the machine.
DENIED_FUNCTIONS = frozenset(
    {
        "reflect",
        "java_method",
        "try_reflect",
        "read_files",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
    }
)
ALLOWED_TABLE_FUNCTIONS = frozenset({"range"})
# Spark session settings for a query's session: no `parquet.`/path`` tables, no SQL scripts.
SESSION_SETTINGS = {"spark.sql.runSQLOnFiles": "false", "spark.sql.scripting.enabled": "false"}
COLUMNS = ("partition", "offset", "timestamp", "key", "value", "headers", "fields")


@dataclass(frozen=True)
class Query:
    """A checked query: ``sql`` as Spark will run it, the ``topics`` it reads (sorted)."""

    sql: str
    topics: tuple[str, ...]


def check_sql(text: str) -> Query:
    """The query ``text`` asks, checked to read only; raises InvalidInput saying what is refused and why."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    text = (text or "").strip().rstrip(";").strip()
    if not text:
        raise InvalidInput("Write a query, e.g. SELECT count(*) FROM `my-topic`.")
    if len(text) > MAX_LENGTH:
        raise InvalidInput(f"The query is {len(text):,} characters long; at most {MAX_LENGTH:,}.")
    try:
        trees = [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except (ParseError, TokenError) as exc:
        raise InvalidInput(f"The query does not parse: {_first(str(exc))}") from None
    if len(trees) != 1:
        raise InvalidInput("One statement at a time: the query holds several.")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        kind = tree.key.upper() if not isinstance(tree, exp.Command) else str(tree.this).upper()
        raise InvalidInput(f"Only queries that read are run here (SELECT, WITH, VALUES); not {kind[:30]}.")
    for node in tree.walk():
        if isinstance(node, exp.DDL | exp.DML | exp.Command | exp.Set | exp.Cache | exp.Uncache):
            raise InvalidInput(f"Only queries that read are run here; {node.key.upper()} is not.")
        if isinstance(node, exp.QueryTransform):
            raise InvalidInput("TRANSFORM ... USING runs a program on the server: it is not allowed.")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in DENIED_FUNCTIONS:
                raise InvalidInput(f"{name}() reaches outside the query: it is not allowed.")
    own = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    topics: list[str] = []
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func):
            name = (table.this.name if isinstance(table.this, exp.Anonymous) else table.this.sql_name()).lower()
            if name not in ALLOWED_TABLE_FUNCTIONS:
                raise InvalidInput(f"{name}(...) as a table is not allowed: tables are topics (`topic-name`).")
            continue
        if table.args.get("db") or table.args.get("catalog"):
            raise InvalidInput(
                f"{table.sql(dialect='spark')[:80]} is not a topic: tables are topics, named in backquotes "
                "(a name with dots, such as `orders.v1`, in one pair of backquotes)."
            )
        if table.name in own:
            continue
        if not table.name:
            raise InvalidInput("A table of the query has no name: tables are topics, named in backquotes.")
        if table.name not in topics:
            topics.append(table.name)
    return Query(sql=tree.sql(dialect="spark"), topics=tuple(sorted(topics)))


def _first(message: str) -> str:
    return " ".join(message.split())[:300]


# ---------------------------------------------------------------- the JSON fields, from a sample


def infer_schema(values: Iterable[bytes | str | None], max_fields: int = 500, max_depth: int = 6) -> str | None:
    """A Spark DDL schema (```a` BIGINT, `b` STRUCT<...>``) for the JSON objects among ``values``: each field
    with the type its values have (BOOLEAN, BIGINT, DOUBLE, STRING, ARRAY, STRUCT; whole numbers and decimals
    together are DOUBLE; values of several kinds, or nested beyond ``max_depth``, are STRING, the field's JSON
    text). None when no value is a JSON object."""
    merged: _Type | None = None
    for raw in values:
        if raw is None:
            continue
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict):
            merged = _merge(merged, _type_of(doc, 0, max_depth))
    if merged is None or merged.kind != "struct" or not merged.fields:
        return None
    budget = [max_fields]
    return ", ".join(f"{_quoted(name)} {_ddl(t, budget)}" for name, t in merged.fields.items())


@dataclass
class _Type:
    kind: str  # null, boolean, bigint, double, string, array, struct
    element: _Type | None = None
    fields: dict[str, _Type] = field(default_factory=dict)


def _type_of(value: Any, depth: int, max_depth: int) -> _Type:
    if value is None:
        return _Type("null")
    if isinstance(value, bool):
        return _Type("boolean")
    if isinstance(value, int):
        return _Type("bigint" if -(2**63) <= value < 2**63 else "double")
    if isinstance(value, float):
        return _Type("double")
    if isinstance(value, str):
        return _Type("string")
    if depth >= max_depth:
        return _Type("string")
    if isinstance(value, list):
        element: _Type | None = None
        for item in value:
            element = _merge(element, _type_of(item, depth + 1, max_depth))
        return _Type("array", element=element or _Type("null"))
    fields: dict[str, _Type] = {}
    for name, item in value.items():
        fields[name] = _merge(fields.get(name), _type_of(item, depth + 1, max_depth))
    return _Type("struct", fields=fields)


def _merge(a: _Type | None, b: _Type) -> _Type:
    if a is None or a.kind == "null":
        return b
    if b.kind == "null":
        return a
    if a.kind == b.kind == "struct":
        fields = dict(a.fields)
        for name, t in b.fields.items():
            fields[name] = _merge(fields.get(name), t)
        return _Type("struct", fields=fields)
    if a.kind == b.kind == "array":
        return _Type("array", element=_merge(a.element, b.element or _Type("null")))
    if a.kind == b.kind:
        return a
    if {a.kind, b.kind} == {"bigint", "double"}:
        return _Type("double")
    return _Type("string")


def _ddl(t: _Type, budget: list[int]) -> str:
    budget[0] -= 1
    if t.kind == "null":
        return "STRING"
    if t.kind == "array":
        return f"ARRAY<{_ddl(t.element or _Type('null'), budget)}>"
    if t.kind == "struct":
        if budget[0] <= 0 or not t.fields:
            return "STRING"
        parts = [f"{_quoted(name)}: {_ddl(inner, budget)}" for name, inner in t.fields.items()]
        return f"STRUCT<{', '.join(parts)}>"
    return t.kind.upper()


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sample_schemas(
    ranges: TopicRanges, sampler: Sampler, formats: Formats | None = None, per_end: int = 100, partitions: int = 6
) -> dict[str, str | None]:
    """Each topic's JSON fields (:func:`infer_schema`) from a sample of its records in ``ranges``: the first and
    last ``per_end`` of up to ``partitions`` partitions, read by ``sampler`` (driver side, no Spark). Topics in a
    schema registry's format are left to their schemas (None)."""
    out: dict[str, str | None] = {}
    by_topic: dict[str, list[PartitionRange]] = {}
    for p in ranges.partitions:
        if p.records:
            by_topic.setdefault(p.topic, []).append(p)
    for topic, parts in by_topic.items():
        fmt = formats.topics.get(topic) if formats else None
        if fmt is not None and fmt.schemas:
            out[topic] = None
            continue
        values: list[bytes | None] = []
        for p in parts[:partitions]:
            values += sampler(topic, p.partition, p.start, min(per_end, p.records))
            if p.records > per_end:
                tail = max(p.start + per_end, p.end - per_end)
                values += sampler(topic, p.partition, tail, p.end - tail)
        out[topic] = infer_schema(values)
    return out


# ---------------------------------------------------------------- results people can store and read


def plain(value: Any) -> Any:
    """A value of a Spark row as JSON can hold it: times as ISO text, decimals as numbers, bytes as base64
    text, rows and maps as objects, NaN and infinities as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        number = float(value)
        return number if math.isfinite(number) else str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


# ---------------------------------------------------------------- running one


def topic_table(records: DataFrame, formats: Formats | None, topic: str, schema: str | None) -> DataFrame:
    """``topic``'s records (the Kafka source's columns, with headers, and ``timestamp`` in ms) as the table of
    :data:`COLUMNS`; ``schema``: the DDL of its JSON values' fields (:func:`infer_schema`), None when they are
    not JSON objects."""
    from pyspark.sql import functions as F

    from analytics.formats import table

    base = table(records, formats, topic)
    if schema is not None:
        base = base.withColumn("fields", F.coalesce(F.col("fields"), F.from_json("value", schema)))
    text_headers = F.transform(
        "headers", lambda h: F.struct(h["key"].alias("key"), h["value"].cast("string").alias("value"))
    )
    return base.select(
        "partition",
        "offset",
        F.timestamp_millis("timestamp").alias("timestamp"),
        "key",
        "value",
        text_headers.alias("headers"),
        "fields",
    )


def empty_table(spark: SparkSession, schema: str | None) -> DataFrame:
    """The table of a topic with nothing to read in the range: :data:`COLUMNS`, no rows."""
    from pyspark.sql import functions as F

    ddl = (
        "partition INT, offset BIGINT, timestamp TIMESTAMP, key STRING, value STRING, "
        "headers ARRAY<STRUCT<key: STRING, value: STRING>>"
    )
    frame = spark.createDataFrame([], ddl)
    fields = F.from_json("value", schema) if schema is not None else F.lit(None).cast("string")
    return frame.withColumn("fields", fields)


def run_sql(
    spark: SparkSession,
    query: Query,
    kafka: dict[str, str],
    ranges: TopicRanges,
    schemas: dict[str, str | None],
    group: str,
    max_rows: int,
    timeout_s: float,
    from_ms: int | None = None,
    to_ms: int | None = None,
    formats: Formats | None = None,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> JobResult:
    """Run ``query`` (checked by :func:`check_sql`) over the records of ``ranges`` in [from_ms, to_ms), each of its
    topics a table (``schemas``: each topic's inferred JSON fields); at most ``max_rows`` rows kept (the summary
    says when there were more), stopped after ``timeout_s`` seconds. Raises JobCancelled, JobFailed."""
    from analytics.runner import JobCancelled, JobFailed, JobResult, collect
    from analytics.source import read_range

    for key, value in SESSION_SETTINGS.items():
        spark.conf.set(key, value)
    for topic in query.topics:
        mine = ranges.only(topic)
        if mine.records:
            records = read_range(spark, {**kafka, "includeHeaders": "true"}, mine, from_ms, to_ms)
            view = topic_table(records, formats, topic, schemas.get(topic))
        else:
            view = empty_table(spark, schemas.get(topic))
        view.createOrReplaceTempView(_quoted(topic))
    frame = spark.sql(query.sql)
    columns = [{"name": f.name, "type": f.dataType.simpleString()} for f in frame.schema.fields]
    stop = threading.Event()
    timed_out = threading.Event()

    def relay() -> None:
        if cancelled is None:
            if not stop.wait(timeout_s):
                timed_out.set()
                stop.set()
            return
        waited = 0.0
        while not stop.is_set() and waited < timeout_s:
            if cancelled.wait(0.2):
                stop.set()
                return
            waited += 0.2
        if not stop.is_set():
            timed_out.set()
            stop.set()

    watcher = threading.Thread(target=relay, daemon=True, name=f"limit-{group}")
    watcher.start()
    try:
        rows = collect(spark, frame.limit(max_rows + 1), group, "sql", progress, stop, ranges.records)
    except JobCancelled:
        if timed_out.is_set():
            raise JobFailed(f"The query ran past its limit of {timeout_s:.0f} s and was stopped.") from None
        raise
    finally:
        stop.set()
        watcher.join(timeout=2)
    truncated = len(rows) > max_rows
    kept = [{name: plain(value) for name, value in row.items()} for row in rows[:max_rows]]
    notes = [f"Only the first {max_rows:,} rows are kept."] if truncated else []
    if not ranges.records:
        notes.append("The topics hold no records in the chosen range.")
    return JobResult(
        rows=kept,
        summary={"columns": columns, "truncated": truncated, "sql": query.sql},
        input_rows=ranges.records,
        notes=notes,
    )
