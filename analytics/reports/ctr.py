"""Ad click-through rate: impressions, clicks and CTR (clicks / impressions) per ad and per campaign
per bucket.

A click counts against its impression (found by ``impression_id``): in the impression's bucket,
for the impression's ad and campaign, however late the click came. An impression id counts once,
in the bucket of its earliest event. A click whose impression is not among the events read (it
fell before the range, or never came) is counted apart, per the campaign the click names, as
``unmatched_clicks`` in the summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = ("bucket_start", "campaign_id", "ad_id", "impressions", "clicks", "ctr")


def transform(events: DataFrame, options: Options) -> DataFrame:
    """Rows of COLUMNS plus ``matched``: false on the rows of unmatched clicks (per campaign, no bucket)."""
    from pyspark.sql import functions as F

    impressions = (
        events.where(F.col("type") == "impression")
        .groupBy("impression_id")
        .agg(F.min_by(F.struct("bucket_start", "campaign_id", "ad_id"), "ts").alias("i"))
    )
    clicks = (
        events.where(F.col("type") == "click")
        .groupBy("impression_id")
        .agg(F.count(F.lit(1)).alias("n"), F.min("campaign_id").alias("click_campaign"))
    )
    joined = impressions.join(clicks, "impression_id", "full_outer").select(
        F.col("i").isNotNull().alias("matched"),
        F.col("i.bucket_start").alias("bucket_start"),
        F.coalesce(F.col("i.campaign_id"), F.col("click_campaign")).alias("campaign_id"),
        F.col("i.ad_id").alias("ad_id"),
        F.when(F.col("i").isNotNull(), 1).otherwise(0).alias("impression"),
        F.coalesce(F.col("n"), F.lit(0)).alias("clicks"),
    )
    sets = [["matched", "bucket_start", "campaign_id", "ad_id"], ["matched", "bucket_start", "campaign_id"]]
    totals = joined.groupingSets(sets, "matched", "bucket_start", "campaign_id", "ad_id").agg(
        F.sum("impression").alias("impressions"), F.sum("clicks").alias("clicks"), F.grouping("ad_id").alias("level")
    )
    # Unmatched clicks have no ad here (their ad_id is null at both levels): only their campaign row is kept.
    totals = totals.where(F.col("matched") | (F.col("level") == 1)).drop("level")
    return totals.withColumn("ctr", F.try_divide(F.col("clicks"), F.col("impressions")))


def finish(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Matched rows as the result; unmatched clicks as {"unmatched_clicks": n, "unmatched_by_campaign": {...}}."""
    kept = [{k: v for k, v in r.items() if k != "matched"} for r in rows if r["matched"]]
    apart = {r["campaign_id"]: int(r["clicks"]) for r in rows if not r["matched"] and r["clicks"]}
    return kept, {"unmatched_clicks": sum(apart.values()), "unmatched_by_campaign": dict(sorted(apart.items()))}
