"""Shares per URL and social network per bucket."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = ("bucket_start", "url", "network", "shares")


def transform(events: DataFrame, options: Options) -> DataFrame:
    from pyspark.sql import functions as F

    shares = events.where(F.col("type") == "share")
    return shares.groupBy("bucket_start", "url", "network").agg(F.count(F.lit(1)).alias("shares"))
