"""Live mode: a Structured Streaming query that keeps per-minute figures current as events arrive.

One query reads the events topic(s) once. Each event becomes one or more (metric, key) rows
(:func:`figures`): a page view counts for ``pv`` overall and per URL, a keyword for ``keyword``, an
impression and a click for ``impressions`` and ``clicks`` per campaign, a share for ``shares`` per
network. One aggregation over one-minute event-time windows counts them, with distinct users
(HyperLogLog: Spark's streaming state keeps no exact distinct sets), and a watermark drops events
more than WATERMARK late.

The query runs in update mode: each micro-batch hands the sink the windows it changed, with their
whole counts so far. The sink stores them by (minute, metric, key), replacing what was there, so a
batch Spark replays after a crash writes the same numbers again instead of adding them twice; the
state and the offsets come back from the checkpoint. The same rows go to a Kafka topic as JSON.

Live CTR counts a click in the minute it happened (a batch report counts it against its impression).

The figures are seen by every role alike (the live page, the output topic), so the fields their keys come
from (:data:`KEY_FIELDS`) can be masked at the source: ``masked`` names the fields to replace, each with its
replacement, before anything is counted, and the figures of those fields count under the replacement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analytics import events

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

WATERMARK = "2 minutes"
WINDOW = "1 minute"
ALL = "*"  # the key of a metric's figure over everything (pv of every URL, say)
METRICS = ("pv", "keyword", "impressions", "clicks", "shares")
MAX_PER_BATCH = 200_000
# The event field each metric's key comes from (pv of one URL...): what masking must reach in the figures.
METRIC_FIELDS = {
    "pv": "url",
    "keyword": "keyword",
    "impressions": "campaign_id",
    "clicks": "campaign_id",
    "shares": "network",
}
KEY_FIELDS = tuple(dict.fromkeys(METRIC_FIELDS.values()))


@dataclass(frozen=True)
class Figure:
    """One (minute, metric, key) figure as the sink stores it."""

    minute_ms: int
    metric: str
    key: str
    count: int
    users: int


def figures(parsed: DataFrame, masked: Mapping[str, str] | None = None) -> DataFrame:
    """Valid parsed events -> rows of (event_time, metric, key, user_id): what the live figures count. A key
    from a field of ``masked`` is that field's replacement instead."""
    from pyspark.sql import functions as F

    hidden = dict(masked or {})

    def field(name: str) -> Column:
        return F.lit(hidden[name]) if name in hidden else F.col(name)

    kind = F.col("type")
    pairs = F.array(
        *[
            F.when(cond, F.struct(F.lit(metric).alias("metric"), key.alias("key")))
            for cond, metric, key in [
                (kind == "page_view", "pv", F.lit(ALL)),
                (kind == "page_view", "pv", field("url")),
                (
                    (kind == "page_view") & F.col("keyword").isNotNull() & (F.col("keyword") != ""),
                    "keyword",
                    field("keyword"),
                ),
                (kind == "impression", "impressions", field("campaign_id")),
                (kind == "click", "clicks", field("campaign_id")),
                (kind == "share", "shares", field("network")),
            ]
        ]
    )
    return (
        parsed.where(F.col("reason").isNull())
        .select(F.timestamp_millis("ts").alias("event_time"), "user_id", F.explode(pairs).alias("p"))
        .where(F.col("p").isNotNull())
        .select("event_time", "user_id", F.col("p.metric").alias("metric"), F.col("p.key").alias("key"))
    )


def per_minute(rows: DataFrame) -> DataFrame:
    """The streaming aggregation: count and distinct users per minute window, metric and key."""
    from pyspark.sql import functions as F

    return (
        rows.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW).alias("w"), "metric", "key")
        .agg(F.count(F.lit(1)).alias("count"), F.approx_count_distinct("user_id", 0.02).alias("users"))
        .select(F.unix_millis(F.col("w.start")).alias("minute_ms"), "metric", "key", "count", "users")
    )


def start_query(
    spark: SparkSession,
    kafka: dict[str, str],
    topics: list[str],
    checkpoint: str,
    store: Callable[[list[Figure]], None],
    output_topic: str | None,
    trigger_seconds: float = 1.0,
    starting_ms: int | None = None,
    masked: Mapping[str, str] | None = None,
) -> StreamingQuery:
    """Start the live query over ``topics``; ``store(figures)`` is called with each batch's changed figures
    (and they are written to ``output_topic`` as JSON when given). Resumes from ``checkpoint`` when it
    holds one; a new one starts at the records of ``starting_ms`` (default: an hour ago), so the figures
    of the last hour show at once and no event written while the query starts is missed. ``masked``: the
    fields of :data:`KEY_FIELDS` whose values no figure may show, each with its replacement (see figures)."""
    import time

    from pyspark.sql import functions as F

    since = starting_ms if starting_ms is not None else int(time.time() * 1000) - 3_600_000
    source = (
        spark.readStream.format("kafka")
        .options(**kafka)
        .option("subscribe", ",".join(topics))
        .option("startingTimestamp", str(since))
        # A busy topic's first batch (its last hour) is read in parts, so figures show while it catches up.
        .option("maxOffsetsPerTrigger", str(MAX_PER_BATCH))
        .option("failOnDataLoss", "false")
        .load()
    )
    counted = per_minute(figures(events.parse(source, "total"), masked))

    def sink(batch: DataFrame, batch_id: int) -> None:
        rows = batch.collect()
        found = [Figure(int(r["minute_ms"]), r["metric"], r["key"], int(r["count"]), int(r["users"])) for r in rows]
        store(found)
        if output_topic and found:
            out = batch.select(
                F.col("key").alias("key"),
                F.to_json(
                    F.struct(
                        F.col("minute_ms"),
                        F.col("metric"),
                        F.col("key"),
                        F.col("count"),
                        F.col("users"),
                        F.lit(batch_id).alias("batch"),
                    )
                ).alias("value"),
            )
            out.write.format("kafka").options(**kafka).option("topic", output_topic).save()

    return (
        counted.writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{trigger_seconds} seconds")
        .queryName("kazami-live")
        .start()
    )


def progress_of(query: StreamingQuery) -> dict[str, Any]:
    """What the last micro-batch did: rows read, per second, the batch id, the watermark."""
    last: dict[str, Any] = query.lastProgress or {}
    return {
        "batch": last.get("batchId"),
        "input_rows": last.get("numInputRows"),
        "rows_per_second": last.get("processedRowsPerSecond"),
        "watermark": (last.get("eventTime") or {}).get("watermark"),
    }
