"""The lag report: per group and partition over a range of the console's lag history, the max, mean and
last lag, the lag in time at the last sample, and the time spent in each status.

Its input is not Kafka but the samples the console keeps (console.models.LagSample): columns
``group``, ``topic``, ``partition``, ``at_ms``, ``lag``, ``lag_ms``, ``status`` (the status the console
judged the partition to have when it sampled, by Burrow's rules). A sample's status lasts until the
next sample, at most ``options.gap_ms`` (three sampling intervals): when sampling stopped for a while,
that while counts in no status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

STATUSES = ("OK", "WARN", "STALL", "STOP", "REWIND", "NOT_EVALUATED")
COLUMNS = (
    "group",
    "topic",
    "partition",
    "samples",
    "max_lag",
    "mean_lag",
    "last_lag",
    "last_lag_ms",
    "last_at",
    *[f"seconds_{s.lower()}" for s in STATUSES],
)
SAMPLES_SCHEMA = "group string, topic string, partition int, at_ms long, lag long, lag_ms long, status string"


def transform(samples: DataFrame, options: Options) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ["group", "topic", "partition"]
    by_time = Window.partitionBy(*keys).orderBy("at_ms")
    timed = samples.withColumn(
        "lasts_ms",
        F.least(F.coalesce(F.lead("at_ms").over(by_time) - F.col("at_ms"), F.lit(0)), F.lit(options.gap_ms)),
    )
    last = F.max_by(F.struct("lag", "lag_ms", "at_ms"), "at_ms")
    seconds = [
        (F.sum(F.when(F.col("status") == status, F.col("lasts_ms")).otherwise(0)) / 1000.0).alias(
            f"seconds_{status.lower()}"
        )
        for status in STATUSES
    ]
    return (
        timed.groupBy(*keys)
        .agg(
            F.count(F.lit(1)).alias("samples"),
            F.max("lag").alias("max_lag"),
            F.avg("lag").alias("mean_lag"),
            last.alias("last"),
            *seconds,
        )
        .select(
            *keys,
            "samples",
            "max_lag",
            F.round("mean_lag", 2).alias("mean_lag"),
            F.col("last.lag").alias("last_lag"),
            F.col("last.lag_ms").alias("last_lag_ms"),
            F.col("last.at_ms").alias("last_at"),
            *[f"seconds_{s.lower()}" for s in STATUSES],
        )
    )
