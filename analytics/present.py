"""What a report's rows look like as charts: time series on a real time axis (every bucket of the span,
null where there is no data, so a chart draws a gap) and ranked bars. Pure functions over the stored
rows, shared by the job page and its tests."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from analytics.events import BUCKETS

TOP = 10  # bars and lines drawn at most; the table below a chart holds every row


def epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def timeline(points: dict[int, float | None], step_ms: int) -> list[int]:
    """Every bucket start from the first to the last of ``points``."""
    if not points:
        return []
    first, last = min(points), max(points)
    return list(range(first, last + step_ms, step_ms))


def _series(label: str, values: dict[int, float | None], times: list[int], unit: str = "") -> dict[str, Any]:
    return {"label": label, "unit": unit, "values": [values.get(t) for t in times]}


def _bars(pairs: Iterable[tuple[str, float]], unit: str = "") -> dict[str, Any]:
    top = sorted(pairs, key=lambda p: (-p[1], p[0]))[:TOP]
    return {"labels": [p[0] for p in top], "values": [p[1] for p in top], "unit": unit}


def chart_data(report: str, bucket: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{"line": {"times", "step_ms", "series"} or None, "bars": {"title", "labels", "values", "unit"} or None,
    "ranked": [{"label", "value", "share"}] or None} for ``report``'s rows."""
    unit = BUCKETS.get(bucket)
    step = unit[1] if unit else None
    builder = {"pv_uu": _pv_uu, "keywords": _keywords, "ctr": _ctr, "shares": _shares}.get(report)
    if builder is None or not rows:
        return {"line": None, "bars": None, "ranked": None}
    return builder(rows, step)


def _line(series: dict[str, dict[int, float | None]], step: int | None, unit: str = "") -> dict[str, Any] | None:
    if step is None:
        return None
    every: dict[int, float | None] = {}
    for values in series.values():
        every.update(values)
    times = timeline(every, step)
    if len(times) < 2:
        return None
    return {"times": times, "step_ms": step, "series": [_series(n, v, times, unit) for n, v in series.items()]}


def _pv_uu(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    pv: dict[int, float | None] = {}
    uu: dict[int, float | None] = {}
    per_url: dict[str, float] = defaultdict(float)
    for r in rows:
        if r["url"] is None:
            if r["bucket_start"] is not None:
                pv[epoch_ms(r["bucket_start"])] = r["pv"]
                uu[epoch_ms(r["bucket_start"])] = r["uu"]
        else:
            per_url[r["url"]] += r["pv"]
    return {
        "line": _line({"PV": pv, "UU": uu}, step),
        "bars": {"title": "Page views per URL", **_bars(per_url.items(), "views")},
        "ranked": None,
    }


def _keywords(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    counts: dict[str, float] = defaultdict(float)
    for r in rows:
        counts[r["keyword"]] += r["count"]
    ranked = sorted(counts.items(), key=lambda p: (-p[1], p[0]))
    most = ranked[0][1] if ranked else 1
    return {
        "line": None,
        "bars": None,
        "ranked": [{"label": k, "value": int(v), "share": v / most} for k, v in ranked[:50]],
    }


def _ctr(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    impressions: dict[str, float] = defaultdict(float)
    clicks: dict[str, float] = defaultdict(float)
    over_time: dict[str, dict[int, float | None]] = defaultdict(dict)
    for r in rows:
        if r["ad_id"] is not None:
            continue
        impressions[r["campaign_id"]] += r["impressions"]
        clicks[r["campaign_id"]] += r["clicks"]
        if r["bucket_start"] is not None and r["ctr"] is not None:
            over_time[r["campaign_id"]][epoch_ms(r["bucket_start"])] = round(100 * r["ctr"], 3)
    rate = {c: round(100 * clicks[c] / impressions[c], 3) for c in impressions if impressions[c]}
    busiest = sorted(impressions, key=lambda c: (-impressions[c], c))[:5]
    return {
        "line": _line({c: over_time[c] for c in busiest}, step, "%"),
        "bars": {"title": "CTR per campaign (%)", **_bars(rate.items(), "%")},
        "ranked": None,
    }


def _shares(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    per_network: dict[str, float] = defaultdict(float)
    over_time: dict[str, dict[int, float | None]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        per_network[r["network"]] += r["shares"]
        if r["bucket_start"] is not None:
            point = over_time[r["network"]]
            point[epoch_ms(r["bucket_start"])] = (point.get(epoch_ms(r["bucket_start"])) or 0) + r["shares"]
    networks = sorted(per_network, key=lambda n: (-per_network[n], n))[:TOP]
    return {
        "line": _line({n: dict(over_time[n]) for n in networks}, step),
        "bars": {"title": "Shares per network", **_bars(per_network.items(), "shares")},
        "ranked": None,
    }
