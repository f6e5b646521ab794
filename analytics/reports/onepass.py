"""Page views and unique users, ad click-through rate and shares in one Spark plan: one read of the
events, one shuffle of them, exact counts.

Each event one of these reports needs becomes one row, and the rows are shuffled once, each by what it
must meet (:data:`KEYS`): a page view by (bucket, user), so that every view of a user in a bucket lands
in one partition; an impression and a click by impression id; a share by (bucket, url, network). After
the shuffle everything but the final sum is local to a partition. The partition key is the partition's
own number, not the keys' hash (:func:`partition_keys`): the groupings below start with it so that none
shuffles again, and with a key of a few values they can fold a partition's users of a (bucket, url)
into one row; with the hash itself, a key per user, nearly every view stayed a row of its own up to the
final sum, and a job over 3M events took 19 s instead of 16.

1. one hash aggregation deduplicates: page views by (bucket, url, user) and by (bucket, user), which
   makes unique users exact without ``count(DISTINCT ...)`` (Spark would expand every view into two rows
   before its shuffle and aggregate them twice more); impressions by (id, bucket, campaign, ad) with
   their earliest time; clicks by (id, campaign); shares by (bucket, url, network);
2. a second one folds the users of a (bucket, url) and of a bucket into PV and UU (only with ``pv_uu``);
3. a sort aggregation by impression id picks each impression's earliest event and adds up its clicks
   (only with ``ctr``: picking by time among text values needs sorted input; by then the page views are
   folded, so it sorts little more than the impressions);
4. each row's share of the results (a matched impression counts for its ad and its campaign) is added up
   over the partitions, the only step with a second shuffle, of a few rows per partition.

:func:`transform` returns the results of every report asked for in one frame, a row per result row with
the report's name and its columns (:data:`COLUMNS`; the columns of other reports are null).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REPORTS = ("pv_uu", "ctr", "shares")
# The columns each report's rows have here (ctr's ``matched`` is false on its unmatched clicks' rows).
COLUMNS = {
    "pv_uu": ("bucket_start", "url", "pv", "uu"),
    "ctr": ("matched", "bucket_start", "campaign_id", "ad_id", "impressions", "clicks", "ctr"),
    "shares": ("bucket_start", "url", "network", "shares"),
}
KEYS = {
    "page_view": ("bucket_start", "user_id"),
    "impression": ("impression_id",),
    "click": ("impression_id",),
    "share": ("bucket_start", "url", "network"),
}
# Kinds of rows: before the sums (what a row stands for), then of the results.
VIEW, VIEWER, IMPRESSION, CLICK, SHARE, IMPRESSION_ID = 1, 2, 3, 4, 5, 6
URL_ROW, BUCKET_ROW, AD_ROW, CAMPAIGN_ROW, UNMATCHED_ROW, SHARE_ROW = 11, 12, 13, 14, 15, 16
RESULT_KINDS = {
    "pv_uu": (URL_ROW, BUCKET_ROW),
    "ctr": (AD_ROW, CAMPAIGN_ROW, UNMATCHED_ROW),
    "shares": (SHARE_ROW,),
}


def transform(events: DataFrame, reports: Collection[str], partitions: int = 0) -> DataFrame:
    """The results of ``reports`` (any of REPORTS) over the valid parsed ``events``: columns ``report`` and
    every report's COLUMNS. ``partitions``: how many partitions the events are shuffled into (0: Spark's
    ``spark.sql.shuffle.partitions``). Raises ValueError for a report not in REPORTS."""
    from pyspark.sql import functions as F

    unknown = set(reports) - set(REPORTS)
    if unknown or not reports:
        raise ValueError(f"one pass computes {', '.join(REPORTS)}, not {', '.join(sorted(unknown)) or 'nothing'}")
    pv, ctr, shares = ("pv_uu" in reports), ("ctr" in reports), ("shares" in reports)
    text = F.lit(None).cast("string")
    number = F.lit(None).cast("bigint")
    b, k1, k2, k3, g = F.col("b"), F.col("k1"), F.col("k2"), F.col("k3"), F.col("g")

    # One row per event: (partition key, kind, bucket, three keys, time).
    kinds: list[tuple[str, int, tuple[Column, Column, Column]]] = []
    if pv:
        kinds.append(("page_view", VIEW, (F.col("url"), F.col("user_id"), text)))
    if ctr:
        kinds.append(("impression", IMPRESSION, (F.col("impression_id"), F.col("campaign_id"), F.col("ad_id"))))
        kinds.append(("click", CLICK, (F.col("impression_id"), F.col("campaign_id"), text)))
    if shares:
        kinds.append(("share", SHARE, (F.col("url"), F.col("network"), text)))

    def by_type(pick: dict[str, Column]) -> Column:
        cases = F.when(F.col("type") == kinds[0][0], pick[kinds[0][0]])
        for name, _, _ in kinds[1:]:
            cases = cases.when(F.col("type") == name, pick[name])
        return cases

    count = partitions if partitions > 0 else int(events.sparkSession.conf.get("spark.sql.shuffle.partitions") or 1)
    # A row's partition number (of the keys' hash), as the value that Spark's hash partitioning sends there.
    numbers = F.array(*[F.lit(key) for key in partition_keys(count)])
    partition = F.element_at(
        numbers, F.pmod(by_type({name: F.hash(*KEYS[name]) for name, _, _ in kinds}), F.lit(count)) + 1
    )
    rows = events.where(F.col("type").isin(*[name for name, _, _ in kinds])).select(
        partition.alias("p"),
        by_type({name: F.lit(kind) for name, kind, _ in kinds}).alias("g"),
        by_type({name: number if name == "click" else F.col("bucket_start") for name, _, _ in kinds}).alias("b"),
        *[by_type({name: keys[i] for name, _, keys in kinds}).alias(f"k{i + 1}") for i in range(3)],
        F.col("ts").alias("t"),
    )
    shuffled = rows.repartition(count, "p")
    if pv:
        # Each view also stands for its viewer over all URLs of the bucket (no url): after the shuffle,
        # so the rows are doubled in memory only.
        level = F.explode(F.when(g == VIEW, F.array(F.lit(VIEW), F.lit(VIEWER))).otherwise(F.array(g)))
        shuffled = shuffled.select("p", level.alias("g"), "b", "k1", "k2", "k3", "t").select(
            "p", "g", "b", F.when(g == VIEWER, text).otherwise(k1).alias("k1"), "k2", "k3", "t"
        )
    # Every grouping below starts with the partition key, so none shuffles again.
    deduplicated = shuffled.groupBy("p", "g", "b", "k1", "k2", "k3").agg(
        F.count(F.lit(1)).alias("n"), F.min("t").alias("t")
    )
    if pv:
        # A (bucket, url) row: PV = its views, UU = its users; the same per bucket over all URLs.
        users = g.isin(VIEW, VIEWER)
        folded = deduplicated.groupBy("p", "g", "b", "k1", F.when(users, text).otherwise(k2).alias("k2"), "k3").agg(
            F.sum("n").alias("x"), F.count(F.lit(1)).alias("y"), F.min("t").alias("t")
        )
    else:
        folded = deduplicated.select("p", "g", "b", "k1", "k2", "k3", F.col("n").alias("x"), F.lit(1).alias("y"), "t")
    x, y = F.col("x"), F.col("y")

    def part(kind: int, bucket: Column, c1: Column, c2: Column, first: Column, second: Column) -> Column:
        return F.struct(
            F.lit(kind).alias("g"),
            bucket.alias("b"),
            c1.alias("c1"),
            c2.alias("c2"),
            first.cast("bigint").alias("x"),
            second.cast("bigint").alias("y"),
        )

    # Each row's share of the result rows.
    parts = []
    if pv:
        parts.append(F.when(g == VIEW, part(URL_ROW, b, k1, text, x, y)))
        parts.append(F.when(g == VIEWER, part(BUCKET_ROW, b, text, text, x, y)))
    if shares:
        parts.append(F.when(g == SHARE, part(SHARE_ROW, b, k1, k2, x, y)))
    if ctr:
        # An impression id's earliest event and its clicks, by id; other rows are alone in their group.
        ad_event = g.isin(IMPRESSION, CLICK)
        impression, click = g == IMPRESSION, g == CLICK
        folded = folded.groupBy(
            "p",
            F.when(ad_event, F.lit(IMPRESSION_ID)).otherwise(g).alias("g"),
            F.when(ad_event, number).otherwise(b).alias("b"),
            "k1",
            F.when(ad_event, text).otherwise(k2).alias("k2"),
            F.when(ad_event, text).otherwise(k3).alias("k3"),
        ).agg(
            F.sum("x").alias("x"),
            F.sum("y").alias("y"),
            F.min_by(F.when(impression, F.struct("b", "k2", "k3")), F.when(impression, F.col("t"))).alias("i"),
            F.coalesce(F.sum(F.when(click, x)), F.lit(0)).alias("clicks"),
            F.min(F.when(click, k2)).alias("click_campaign"),
        )
        i, clicks, matched = F.col("i"), F.col("clicks"), F.col("i").isNotNull()
        first = g == IMPRESSION_ID
        parts.append(F.when(first & matched, part(AD_ROW, i["b"], i["k2"], i["k3"], F.lit(1), clicks)))
        parts.append(F.when(first & matched, part(CAMPAIGN_ROW, i["b"], i["k2"], text, F.lit(1), clicks)))
        parts.append(
            F.when(first & ~matched, part(UNMATCHED_ROW, number, F.col("click_campaign"), text, F.lit(0), clicks))
        )
    summed = (
        folded.select(F.inline(F.array(*parts)))
        .where(g.isNotNull())
        .groupBy("g", "b", "c1", "c2")
        .agg(F.sum("x").alias("x"), F.sum("y").alias("y"))
    )
    return summed.select(*_named())


def partition_keys(count: int) -> list[int]:
    """``count`` integers, the i-th of which Spark's hash partitioning into ``count`` partitions sends to
    partition i: pmod(murmur3(key, seed 42), count) = i, the formula of Spark's HashPartitioning."""
    keys: dict[int, int] = {}
    candidate = 0
    while len(keys) < count:
        keys.setdefault(murmur3_int(candidate) % count, candidate)
        candidate += 1
    return [keys[i] for i in range(count)]


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's Murmur3 hash of a 32-bit integer (``hash(int)`` in Spark SQL), as a signed 32-bit integer."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k = (value & mask) * 0xCC9E2D51 & mask
    k = rotl(k, 15) * 0x1B873593 & mask
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & mask
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _named() -> list[Column]:
    """The summed rows' columns under each report's names."""
    from pyspark.sql import functions as F

    g, x, y = F.col("g"), F.col("x"), F.col("y")

    def when(kinds: tuple[int, ...], value: Column) -> Column:
        return F.when(g.isin(*kinds), value)

    views, ads = RESULT_KINDS["pv_uu"], RESULT_KINDS["ctr"]
    report = when(views, F.lit("pv_uu")).when(g.isin(*ads), "ctr").when(g == SHARE_ROW, "shares")
    return [
        report.alias("report"),
        F.col("b").alias("bucket_start"),
        when((*views, SHARE_ROW), F.col("c1")).alias("url"),
        when((SHARE_ROW,), F.col("c2")).alias("network"),
        when(views, x).alias("pv"),
        when(views, y).alias("uu"),
        when(ads, g != UNMATCHED_ROW).alias("matched"),
        when(ads, F.col("c1")).alias("campaign_id"),
        when(ads, F.col("c2")).alias("ad_id"),
        when(ads, x).alias("impressions"),
        when(ads, y).alias("clicks"),
        when(ads, F.try_divide(y, x)).alias("ctr"),
        when((SHARE_ROW,), x).alias("shares"),
    ]


def rows_of(report: str, frame: DataFrame) -> DataFrame:
    """``report``'s rows of a :func:`transform` frame, with its COLUMNS."""
    from pyspark.sql import functions as F

    return frame.where(F.col("report") == report).select(*COLUMNS[report])
