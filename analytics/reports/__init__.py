"""The reports, one module each. A report's ``transform`` is a pure function from the parsed, valid
events (analytics.events.parse) to its result frame; ``finish`` turns the collected rows into
the rows the console stores and a summary of what stands apart from them. PV/UU (exact), CTR and
shares are computed by one plan (``onepass``), for one report or several over one read."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from analytics.reports import ctr, keywords, lag, onepass, pv_uu, shares


@dataclass(frozen=True)
class Options:
    approximate: bool = False  # HyperLogLog distinct counts (pv_uu)
    approx_rsd: float = 0.01  # their relative standard deviation
    top_n: int = 20  # keywords per bucket
    gap_ms: int = 30_000  # lag report: the longest a sample's status counts for (three sampling intervals)
    partitions: int = 0  # partitions the events are shuffled into (0: spark.sql.shuffle.partitions)


REPORTS: dict[str, ModuleType] = {"pv_uu": pv_uu, "keywords": keywords, "ctr": ctr, "shares": shares, "lag": lag}
# Reports over topics of web events; the lag report reads the console's lag history instead.
EVENT_REPORTS = ("pv_uu", "keywords", "ctr", "shares")
LABELS = {
    "pv_uu": "Page views and unique users",
    "keywords": "Top search keywords",
    "ctr": "Ad click-through rate",
    "shares": "Shares per network",
    "lag": "Lag report",
}
# What a job is, for lists of jobs: the reports and the SQL queries (analytics.sql).
JOB_LABELS = {**LABELS, "sql": "SQL query", "profile": "Topic profile"}


def one_pass(report: str, options: Options) -> bool:
    """Whether ``report`` with ``options`` is computed by the one-pass plan (onepass.transform)."""
    return report in onepass.REPORTS and not (report == "pv_uu" and options.approximate)


def finish(report: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows to keep and the summary of ``report``'s collected ``rows``."""
    module = REPORTS[report]
    if hasattr(module, "finish"):
        kept, summary = module.finish(rows)
        return kept, summary
    return rows, {}
