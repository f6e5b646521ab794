"""A topic's profile: what its records hold, in one Spark job over one read of them.

The records of a range (read by analytics.source.read_range, values in a schema registry's wire format decoded to
their JSON documents by analytics.formats.decode) become, each, one row for the record and one row per field of
its JSON value: fields are paths (a nested object's fields as ``a.b``, up to :data:`MAX_DEPTH` levels; an object is
a field itself too, and an array is a value, its items not looked into). That long frame is kept in Spark's cache
for the job, so Kafka is read once, and the sections below are aggregated from it in one collect:

- per field: the JSON types seen with their counts (``integer``: a whole number that fits in 64 bits; ``number``:
  any other), how many records hold it null and how many lack it, exactly, so the null rate is exact; distinct
  values by HyperLogLog (``approx_count_distinct`` with relative standard deviation :data:`RSD`; an estimate
  above the count of values is cut to it); min and max of its numbers and of its strings; its :data:`TOP`
  commonest values with their exact counts; the first and last hour it was seen;
- keys: distinct keys (HyperLogLog, as above), the :data:`TOP` hottest with their share of the records, and
  records without a key;
- per partition: records and bytes (key and value as written), exact; a partition is *hot* when it holds more
  than :data:`HOT_FACTOR` times the mean records of the topic's partitions in the range;
- record sizes (key plus value bytes as written): p50, p90, p99 by ``percentile_approx`` (accuracy
  :data:`ACCURACY`: a rank within 1/ACCURACY of the records from the true one), and the exact min, max, mean;
- records per hour over the range (UTC hours);
- schema drift: the fields first seen after the first hour that holds JSON objects, or last seen before the
  last one.

Knows Spark, nothing of Django; the console's job process calls :func:`run_profile`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import TYPE_CHECKING, Any

from analytics.runner import JobResult, Progress, iso

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from analytics.formats import Formats
    from broker.messages.ranges import TopicRanges

RSD = 0.01  # approx_count_distinct's relative standard deviation: the estimate's standard error, 1%
TOP = 10  # values of a field, and keys, ranked
HOT_FACTOR = 2.0  # a partition is hot above this many times the mean records per partition
ACCURACY = 10_000  # percentile_approx's
PERCENTILES = (0.5, 0.9, 0.99)
MAX_DEPTH = 5  # levels of nested objects looked into (deeper objects are values)
MAX_FIELDS = 500  # fields kept in the result, the most present first
MAX_TEXT = 200  # characters of a value shown (top values, min and max)
HOUR = 3_600_000
MAX_HOURS = 24 * 400  # hours without records are listed (as 0) over a range up to this long
TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
COLUMNS = (
    "field",
    "types",
    "present",
    "nulls",
    "missing",
    "null_rate",
    "distinct",
    "min",
    "max",
    "top",
    "first_seen",
    "last_seen",
    "drift",
)


# ---------------------------------------------------------------- the plan


def _flatten_sql(map_sql: str, prefix_sql: str, depth: int = 1) -> str:
    """A SQL expression: the (path, value) pairs of the VARIANT map ``map_sql`` and, up to MAX_DEPTH, of the
    objects among its values, paths prefixed by ``prefix_sql``; an array<struct<path, x>>."""
    e = f"e{depth}"
    path = f"concat({prefix_sql}, {e}.key)"
    here = f"array(named_struct('path', {path}, 'x', {e}.value))"
    body = here
    if depth < MAX_DEPTH:
        child = f"try_variant_get({e}.value, '$', 'map<string,variant>')"
        inner = _flatten_sql(child, f"concat({path}, '.')", depth + 1)
        body = f"if({child} IS NULL, {here}, concat({here}, {inner}))"
    return f"flatten(transform(map_entries({map_sql}), {e} -> {body}))"


JSON_TYPE_SQL = (
    "CASE WHEN x IS NULL THEN NULL WHEN is_variant_null(x) THEN 'null' "
    "WHEN try_variant_get(x, '$', 'map<string,variant>') IS NOT NULL THEN 'object' "
    "WHEN try_variant_get(x, '$', 'array<variant>') IS NOT NULL THEN 'array' "
    "ELSE CASE WHEN schema_of_variant(x) = 'BOOLEAN' THEN 'boolean' WHEN schema_of_variant(x) = 'STRING' "
    "THEN 'string' WHEN schema_of_variant(x) LIKE '%INT' THEN 'integer' ELSE 'number' END END"
)


def long_frame(records: DataFrame) -> DataFrame:
    """``records`` (``partition``, ``timestamp`` ms, ``key``, ``value`` as text, ``size``) as one row per record
    (``path`` null: its ``key``, ``size`` and ``shape``: object, null or other) and one row per field of its JSON
    object (``path``, ``jtype``, ``item``: the value as text, a string's own text; ``num``: a number's value);
    every row with its ``partition`` and ``hour``."""
    from pyspark.sql import functions as F

    parsed = records.select(
        "partition",
        ((F.col("timestamp") / F.lit(HOUR)).cast("long") * F.lit(HOUR)).alias("hour"),
        F.col("key").cast("string").alias("key"),
        F.col("size").cast("long").alias("size"),
        F.col("value").cast("string").alias("value"),
    ).withColumn("m", F.expr("try_variant_get(try_parse_json(value), '$', 'map<string,variant>')"))
    marker = "array(named_struct('path', CAST(NULL AS STRING), 'x', CAST(NULL AS VARIANT)))"
    flat = _flatten_sql("m", "''")
    entries = F.expr(f"if(m IS NULL, {marker}, concat({marker}, {flat}))")
    shape = F.when(F.col("m").isNotNull(), "object").when(F.col("value").isNull(), "null").otherwise("other")
    exploded = parsed.select(
        "partition", "hour", "key", "size", shape.alias("shape"), F.explode(entries).alias("e")
    ).select("partition", "hour", "key", "size", "shape", F.col("e.path").alias("path"), F.col("e.x").alias("x"))
    is_record = F.col("path").isNull()
    jtype = F.expr(JSON_TYPE_SQL)
    item = (
        F.when(jtype == "string", F.expr("try_variant_get(x, '$', 'string')"))
        .when(jtype != "null", F.expr("to_json(x)"))
        .alias("item")
    )
    num = F.when(jtype.isin("integer", "number"), F.expr("try_variant_get(x, '$', 'double')")).alias("num")
    return exploded.select(
        "partition",
        "hour",
        "path",
        jtype.alias("jtype"),
        item,
        num,
        F.when(is_record, F.col("key")).alias("key"),
        F.when(is_record, F.col("size")).alias("size"),
        F.when(is_record, F.col("shape")).alias("shape"),
    )


def _packed(section: str, frame: DataFrame, *columns: Column | str) -> DataFrame:
    from pyspark.sql import functions as F

    return frame.select(
        F.lit(section).alias("section"), F.to_json(F.struct(*columns), {"ignoreNullFields": "false"}).alias("data")
    )


def sections(long: DataFrame) -> DataFrame:
    """Every section of the profile from :func:`long_frame`'s rows, as rows of (``section``, ``data``: JSON)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    records = long.where(F.col("path").isNull())
    fields = long.where(F.col("path").isNotNull())
    string = F.col("jtype") == "string"
    per_field = fields.groupBy("path").agg(
        F.count(F.lit(1)).alias("present"),
        *[F.count_if(F.col("jtype") == t).alias(t) for t in TYPES],
        F.approx_count_distinct("item", RSD).alias("distinct"),
        F.min("num").alias("min_num"),
        F.max("num").alias("max_num"),
        F.min(F.when(string, F.col("item"))).alias("min_text"),
        F.max(F.when(string, F.col("item"))).alias("max_text"),
        F.min("hour").alias("first_hour"),
        F.max("hour").alias("last_hour"),
    )
    # Top values of each field and the hottest keys: counted exactly, ranked within their field (or the keys).
    valued = fields.where(F.col("item").isNotNull()).select(F.lit(False).alias("is_key"), "path", "item")
    keyed = records.where(F.col("key").isNotNull()).select(
        F.lit(True).alias("is_key"), F.lit("").alias("path"), F.col("key").alias("item")
    )
    counted = valued.unionByName(keyed).groupBy("is_key", "path", "item").agg(F.count(F.lit(1)).alias("count"))
    rank = F.row_number().over(Window.partitionBy("is_key", "path").orderBy(F.desc("count"), F.asc("item")))
    top = counted.withColumn("rank", rank).where(F.col("rank") <= TOP)
    total = records.agg(
        F.count(F.lit(1)).alias("records"),
        F.count_if(F.col("shape") == "object").alias("objects"),
        F.count_if(F.col("shape") == "null").alias("null_values"),
        F.count_if(F.col("shape") == "other").alias("other_values"),
        F.coalesce(F.sum("size"), F.lit(0)).alias("bytes"),
        F.min("size").alias("min_size"),
        F.max("size").alias("max_size"),
        F.percentile_approx("size", list(PERCENTILES), ACCURACY).alias("percentiles"),
        F.approx_count_distinct("key", RSD).alias("distinct_keys"),
        F.count_if(F.col("key").isNull()).alias("null_keys"),
        F.min(F.when(F.col("shape") == "object", F.col("hour"))).alias("first_object_hour"),
        F.max(F.when(F.col("shape") == "object", F.col("hour"))).alias("last_object_hour"),
    )
    partitions = records.groupBy("partition").agg(
        F.count(F.lit(1)).alias("records"), F.coalesce(F.sum("size"), F.lit(0)).alias("bytes")
    )
    hours = records.groupBy("hour").agg(F.count(F.lit(1)).alias("records"))
    return (
        _packed("field", per_field, *per_field.columns)
        .unionByName(_packed("top", top, "is_key", "path", "item", "count"))
        .unionByName(_packed("total", total, *total.columns))
        .unionByName(_packed("partition", partitions, *partitions.columns))
        .unionByName(_packed("hour", hours, *hours.columns))
    )


# ---------------------------------------------------------------- running one


def run_profile(
    spark: SparkSession,
    topic: str,
    kafka: dict[str, str],
    ranges: TopicRanges,
    group: str,
    from_ms: int | None = None,
    to_ms: int | None = None,
    formats: Formats | None = None,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> JobResult:
    """The profile of ``topic``'s records in ``ranges`` whose time is in [from_ms, to_ms): rows per field
    (:data:`COLUMNS`) and the other sections in the summary (:func:`shape_result`). Raises JobCancelled,
    JobFailed."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from analytics.formats import decode
    from analytics.runner import collect
    from analytics.source import read_range

    mine = ranges.only(topic)
    partitions = sorted({p.partition for p in mine.partitions})
    if not mine.records:
        result = shape_result([], partitions)
        result.notes.append("No records in the chosen range: there was nothing to profile.")
        return result
    raw = read_range(spark, kafka, mine, from_ms, to_ms)
    sized = raw.withColumn("size", F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0)))
    long = long_frame(decode(sized, formats)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        collected = collect(spark, sections(long), group, f"profile of {topic}", progress, cancelled, mine.records)
    finally:
        with contextlib.suppress(Exception):  # the server is gone: it has forgotten the cache too
            long.unpersist()
    result = shape_result([(r["section"], json.loads(r["data"])) for r in collected], partitions)
    if not result.summary["records"]:
        result.notes.append("No records in the chosen range: there was nothing to profile.")
    if formats is not None:
        result.notes[:0] = formats.notes()
    if progress:
        progress(1.0, "done")
    return result


def _text(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + "…"
    return value


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value


def shape_result(found: list[tuple[str, dict[str, Any]]], partitions: list[int]) -> JobResult:
    """The profile from the collected sections (``found``: (section, data) pairs) of a topic whose range covers
    ``partitions`` (those with no record in it count with 0)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for section, data in found:
        by.setdefault(section, []).append(data)
    total = (by.get("total") or [{}])[0]
    records = int(total.get("records") or 0)
    objects = int(total.get("objects") or 0)
    tops: dict[tuple[bool, str], list[dict[str, Any]]] = {}
    for t in by.get("top", []):
        tops.setdefault((bool(t["is_key"]), t["path"]), []).append(t)
    for listed in tops.values():
        listed.sort(key=lambda t: (-t["count"], t["item"]))
    first_hour, last_hour = total.get("first_object_hour"), total.get("last_object_hour")
    rows = []
    fields = sorted(by.get("field", []), key=lambda f: (-f["present"], f["path"]))
    for f in fields[:MAX_FIELDS]:
        nulls = int(f["null"])
        missing = objects - int(f["present"])
        drift = []
        if first_hour is not None and f["first_hour"] > first_hour:
            drift.append("appeared")
        if last_hour is not None and f["last_hour"] < last_hour:
            drift.append("disappeared")
        has_numbers = f["min_num"] is not None
        rows.append(
            {
                "field": f["path"],
                "types": {t: int(f[t]) for t in TYPES if f[t]},
                "present": int(f["present"]),
                "nulls": nulls,
                "missing": missing,
                "null_rate": (nulls + missing) / objects if objects else None,
                # HyperLogLog may overshoot: never more distinct values than values.
                "distinct": min(int(f["distinct"]), int(f["present"]) - nulls),
                "min": _number(f["min_num"]) if has_numbers else _text(f["min_text"]),
                "max": _number(f["max_num"]) if has_numbers else _text(f["max_text"]),
                "min_text": _text(f["min_text"]) if has_numbers else None,
                "max_text": _text(f["max_text"]) if has_numbers else None,
                "top": [
                    {"value": _text(t["item"]), "count": int(t["count"])} for t in tops.get((False, f["path"]), [])
                ],
                "first_seen": iso(int(f["first_hour"])),
                "last_seen": iso(int(f["last_hour"])),
                "drift": ", ".join(drift) or None,
            }
        )
    rows.sort(key=lambda r: r["field"])
    counts = {int(p["partition"]): (int(p["records"]), int(p["bytes"])) for p in by.get("partition", [])}
    every = sorted(set(partitions) | set(counts))
    mean = records / len(every) if every else 0.0
    per_partition = [
        {
            "partition": p,
            "records": counts.get(p, (0, 0))[0],
            "bytes": counts.get(p, (0, 0))[1],
            "hot": bool(mean) and counts.get(p, (0, 0))[0] > HOT_FACTOR * mean,
        }
        for p in every
    ]
    percentiles = total.get("percentiles") or [None] * len(PERCENTILES)
    keys = [
        {"key": _text(t["item"]), "count": int(t["count"]), "share": int(t["count"]) / records if records else None}
        for t in tops.get((True, ""), [])
    ]
    counted_hours = {int(h["hour"]): int(h["records"]) for h in by.get("hour", [])}
    hours = sorted(counted_hours)
    if hours and (hours[-1] - hours[0]) // HOUR < MAX_HOURS:  # hours without records as 0, for the chart
        hours = list(range(hours[0], hours[-1] + HOUR, HOUR))
    summary = {
        "records": records,
        "objects": objects,
        "null_values": int(total.get("null_values") or 0),
        "other_values": int(total.get("other_values") or 0),
        "bytes": int(total.get("bytes") or 0),
        "rsd": RSD,
        "hot_factor": HOT_FACTOR,
        "fields": len(fields),
        "fields_shown": min(len(fields), MAX_FIELDS),
        "keys": {
            "distinct": min(int(total.get("distinct_keys") or 0), records - int(total.get("null_keys") or 0)),
            "null": int(total.get("null_keys") or 0),
            "top": keys,
        },
        "partitions": per_partition,
        "mean_records": mean,
        "sizes": {
            **{f"p{round(q * 100)}": v for q, v in zip(PERCENTILES, percentiles, strict=True)},
            "min": total.get("min_size"),
            "max": total.get("max_size"),
            "mean": (int(total.get("bytes") or 0) / records) if records else None,
        },
        "hours": [{"hour": iso(h), "records": counted_hours.get(h, 0)} for h in hours],
        "first_hour": iso(int(first_hour)) if first_hour is not None else None,
        "last_hour": iso(int(last_hour)) if last_hour is not None else None,
        "drift": [r["field"] for r in rows if r["drift"]],
    }
    notes = []
    if len(fields) > MAX_FIELDS:
        notes.append(f"The records hold {len(fields):,} fields; the {MAX_FIELDS:,} most present are shown.")
    if records and not objects:
        notes.append("No record's value is a JSON object: there are no fields to profile.")
    return JobResult(
        rows=rows, summary=summary, input_rows=records, input_bytes=int(total.get("bytes") or 0), notes=notes
    )
