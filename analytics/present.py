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
    builder = {"pv_uu": _pv_uu, "keywords": _keywords, "ctr": _ctr, "shares": _shares, "lag": _lag}.get(report)
    if builder is None or not rows:
        return {"line": None, "bars": None, "ranked": None}
    return builder(rows, step)


STATUS_COLOURS = {
    "OK": "#1f8a4c",
    "WARN": "#b7791f",
    "STALL": "#c53030",
    "STOP": "#7b1f1f",
    "REWIND": "#be185d",
    "NOT_EVALUATED": "#9aa3b2",
}


def _lag(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    """Bars of each group's largest lag, and stacked bars of the time its partitions spent in each status."""
    worst: dict[str, float] = defaultdict(float)
    seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        worst[r["group"]] = max(worst[r["group"]], r["max_lag"] or 0)
        for status in STATUS_COLOURS:
            seconds[r["group"]][status] += r.get(f"seconds_{status.lower()}") or 0
    groups = sorted(worst, key=lambda g: (-worst[g], g))[:TOP]
    return {
        "line": None,
        "bars": {"title": "Largest lag per group (messages)", **_bars(worst.items(), "messages")},
        "stacked": {
            "title": "Time in each status (partition-minutes)",
            "labels": groups,
            "series": [
                {"label": status, "color": colour, "values": [round(seconds[g][status] / 60, 1) for g in groups]}
                for status, colour in STATUS_COLOURS.items()
                if any(seconds[g][status] for g in groups)
            ],
        },
        "ranked": None,
    }


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


MINUTE = 60_000


def live_summary(rows: list[tuple[int, str, str, int, int]], now_ms: int, minutes: int = 60) -> dict[str, Any]:
    """The live page's figures from stored (minute_ms, metric, key, count, users) rows: PV and UU per minute
    over the last ``minutes`` (a line, gaps as nulls), this minute's PV and UU, and over the last 30
    minutes the top keywords, CTR per campaign and shares per network."""
    this_minute = now_ms - now_ms % MINUTE
    first = this_minute - (minutes - 1) * MINUTE
    recent = this_minute - 29 * MINUTE
    pv: dict[int, float | None] = {}
    uu: dict[int, float | None] = {}
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for minute, metric, key, count, users in rows:
        if metric == "pv" and key == "*" and minute >= first:
            pv[minute], uu[minute] = count, users
        if minute >= recent and not (metric == "pv" and key == "*"):
            sums[metric][key] += count
    times = list(range(first, this_minute + MINUTE, MINUTE))
    campaigns = sorted(set(sums["impressions"]) | set(sums["clicks"]), key=lambda c: -sums["impressions"].get(c, 0))
    ctr = [
        {
            "campaign": c,
            "impressions": int(sums["impressions"].get(c, 0)),
            "clicks": int(sums["clicks"].get(c, 0)),
            "ctr": (sums["clicks"].get(c, 0) / sums["impressions"][c]) if sums["impressions"].get(c) else None,
        }
        for c in campaigns[:TOP]
    ]
    keywords = sorted(sums["keyword"].items(), key=lambda p: (-p[1], p[0]))[:TOP]
    most = keywords[0][1] if keywords else 1
    return {
        "line": {
            "times": times,
            "step_ms": MINUTE,
            "series": [_series("PV", pv, times), _series("UU", uu, times)],
        },
        "pv_now": int(pv.get(this_minute) or 0),
        "uu_now": int(uu.get(this_minute) or 0),
        "pv_recent": int(sum(v or 0 for m, v in pv.items() if m >= recent)),
        "keywords": [{"label": k, "value": int(v), "share": v / most} for k, v in keywords],
        "ctr": ctr,
        "shares": [{"label": k, "value": int(v)} for k, v in sorted(sums["shares"].items(), key=lambda p: -p[1])[:TOP]],
    }
