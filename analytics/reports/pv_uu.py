"""Page views (PV) and unique users (UU) per URL per bucket, and per bucket over all URLs.

UU counts distinct ``user_id``s exactly, or with HyperLogLog (``approx_count_distinct``) when the
job asks for it: a few kilobytes per group however many users, at a relative error of about 1%.
The all-URLs row has ``url`` null; its UU counts each user once however many pages they saw.

The exact count is computed with the other reports of one pass (analytics.reports.onepass): the views
are shuffled by (bucket, user) and deduplicated where they land, so the distinct users of a URL and of
a bucket are counted without ``count(DISTINCT ...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analytics.reports import onepass

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = onepass.COLUMNS["pv_uu"]


def transform(events: DataFrame, options: Options) -> DataFrame:
    from pyspark.sql import functions as F

    if not options.approximate:
        return onepass.rows_of("pv_uu", onepass.transform(events, ["pv_uu"], options.partitions))
    views = events.where(F.col("type") == "page_view").select("bucket_start", "url", "user_id")
    # One pass for both levels: the grouping sets expand each view into its (bucket, url) and (bucket) rows.
    return views.groupingSets([["bucket_start", "url"], ["bucket_start"]], "bucket_start", "url").agg(
        F.count(F.lit(1)).alias("pv"), F.approx_count_distinct("user_id", options.approx_rsd).alias("uu")
    )
