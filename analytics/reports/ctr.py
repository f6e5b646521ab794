"""Ad click-through rate: impressions, clicks and CTR (clicks / impressions) per ad and per campaign
per bucket.

A click counts against its impression (found by ``impression_id``): in the impression's bucket,
for the impression's ad and campaign, however late the click came. An impression id counts once,
in the bucket of its earliest event. A click whose impression is not among the events read (it
fell before the range, or never came) is counted apart, per the campaign the click names, as
``unmatched_clicks`` in the summary.

It is computed with the other reports of one pass (analytics.reports.onepass): the impressions and
clicks are shuffled by impression id and meet in one aggregation, with no join and no second read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analytics.reports import onepass

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = ("bucket_start", "campaign_id", "ad_id", "impressions", "clicks", "ctr")


def transform(events: DataFrame, options: Options) -> DataFrame:
    """Rows of COLUMNS plus ``matched``: false on the rows of unmatched clicks (per campaign, no bucket)."""
    return onepass.rows_of("ctr", onepass.transform(events, ["ctr"], options.partitions))


def finish(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Matched rows as the result; unmatched clicks as {"unmatched_clicks": n, "unmatched_by_campaign": {...}}."""
    kept = [{k: v for k, v in r.items() if k != "matched"} for r in rows if r["matched"]]
    apart = {r["campaign_id"]: int(r["clicks"]) for r in rows if not r["matched"] and r["clicks"]}
    return kept, {"unmatched_clicks": sum(apart.values()), "unmatched_by_campaign": dict(sorted(apart.items()))}
