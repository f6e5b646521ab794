"""Shares per URL and social network per bucket (with the other reports of one pass:
analytics.reports.onepass)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analytics.reports import onepass

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from analytics.reports import Options

COLUMNS = onepass.COLUMNS["shares"]


def transform(events: DataFrame, options: Options) -> DataFrame:
    return onepass.rows_of("shares", onepass.transform(events, ["shares"], options.partitions))
