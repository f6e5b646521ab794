"""The top N search keywords per bucket: page views that carry a ``keyword``, counted per keyword.

Keywords are counted as written (no case folding); an empty keyword is no search. Ties are ranked
by keyword, so the same events always give the same ranking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = ("bucket_start", "keyword", "count", "rank")
ORDER = ("bucket_start", "rank")  # how the stored rows are ordered


def transform(events: DataFrame, options: Options) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    searches = events.where((F.col("type") == "page_view") & F.col("keyword").isNotNull() & (F.col("keyword") != ""))
    counts = searches.groupBy("bucket_start", "keyword").agg(F.count(F.lit(1)).alias("count"))
    order = Window.partitionBy("bucket_start").orderBy(F.desc("count"), F.asc("keyword"))
    return counts.withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= options.top_n)
