"""What a report's rows look like to people: time series on a real time axis (every bucket of the span,
null where there is no data, so a chart draws a gap), ranked bars, the top URLs of each bucket with the rest
summed, and the rows as a table page sorted the way people read (numbers as numbers, names with numbers in
them in natural order: /p2 before /p10). Pure functions over the stored rows, shared by the job page, the
runner's stored order and their tests."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from analytics.events import BUCKETS

TOP = 10  # bars and lines drawn at most; the table below a chart holds every row
TOP_URLS = 5  # URLs drawn (and listed per bucket) by name; the rest summed as "other"
PAGE_SIZES = (25, 50, 100, 250)  # rows a table page may hold
PER_PAGE = 50
CTR_POINT_IMPRESSIONS = 500  # a CTR point over time rests on about this many impressions (buckets merged)
CTR_LEAST_IMPRESSIONS = 100  # a merged window with fewer is left out (a gap), not drawn as a wild swing
NICE_MERGES = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60, 120, 180, 240, 360, 720, 1440)

_DIGITS = re.compile(r"(\d+)")


def natural_key(value: Any) -> tuple[Any, ...]:
    """A sort key that puts None first, then numbers by value, then text in natural order: runs of digits
    compare as numbers ("/p2" < "/p10"), the rest without case; the text itself breaks ties ("p02" / "p2")."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int | float):
        return (1, value)
    text = str(value)
    parts = tuple((0, int(p), "") if i % 2 else (1, 0, p.casefold()) for i, p in enumerate(_DIGITS.split(text)) if p)
    return (2, parts, text)


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
    top = sorted(pairs, key=lambda p: (-p[1], natural_key(p[0])))[:TOP]
    return {"labels": [p[0] for p in top], "values": [p[1] for p in top], "unit": unit}


def _per(bucket_ms: int) -> str:
    """'per minute', 'per 15 minutes', 'per hour', 'per 6 hours', 'per day' for a bucket's length."""
    for size, name in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute")):
        if bucket_ms % size == 0:
            n = bucket_ms // size
            return f"per {name}" if n == 1 else f"per {n} {name}s"
    return f"per {bucket_ms // 1000} s"


def chart_data(report: str, bucket: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{"line": {"times", "step_ms", "series", "y_title"} or None, "area": the same, stacked (PV/UU: the top URLs
    and the rest over time) or absent, "bars": {"title", "labels", "values", "unit"} or None,
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


def _line(
    series: dict[str, dict[int, float | None]], step: int | None, unit: str = "", y_title: str = ""
) -> dict[str, Any] | None:
    if step is None:
        return None
    every: dict[int, float | None] = {}
    for values in series.values():
        every.update(values)
    times = timeline(every, step)
    if len(times) < 2:
        return None
    return {
        "times": times,
        "step_ms": step,
        "y_title": y_title,
        "series": [_series(n, v, times, unit) for n, v in series.items()],
    }


def _pv_uu(rows: list[dict[str, Any]], step: int | None) -> dict[str, Any]:
    pv: dict[int, float | None] = {}
    uu: dict[int, float | None] = {}
    per_url: dict[str, float] = defaultdict(float)
    url_time: dict[str, dict[int, float]] = defaultdict(dict)
    for r in rows:
        if r["url"] is None:
            if r["bucket_start"] is not None:
                pv[epoch_ms(r["bucket_start"])] = r["pv"]
                uu[epoch_ms(r["bucket_start"])] = r["uu"]
        else:
            per_url[r["url"]] += r["pv"]
            if r["bucket_start"] is not None:
                url_time[r["url"]][epoch_ms(r["bucket_start"])] = r["pv"]
    per = _per(step) if step else ""
    charts: dict[str, Any] = {
        "line": _line({"PV": pv, "UU": uu}, step, y_title=f"page views / unique users {per}"),
        "bars": {"title": f"Top {min(TOP, len(per_url))} URLs by page views", **_bars(per_url.items(), "page views")},
        "ranked": None,
    }
    if charts["line"] is not None:
        charts["line"]["title"] = "Page views and unique users over time"
    area = _top_urls_over_time(pv, per_url, url_time, step)
    if area is not None:
        charts["area"] = area
    return charts


def _top_urls_over_time(
    pv: dict[int, float | None], per_url: dict[str, float], url_time: dict[str, dict[int, float]], step: int | None
) -> dict[str, Any] | None:
    """The TOP_URLS URLs with the most page views over the range, each a line over time, and "other": the rest of
    each bucket's page views (its total less theirs), so that with it the lines add up to the bucket's PV. On a
    site with a long tail "other" is most of the views and would squash the named lines to the floor, so it
    starts hidden (a click on its legend shows it)."""
    top = sorted(per_url, key=lambda u: (-per_url[u], natural_key(u)))[:TOP_URLS]
    series: dict[str, dict[int, float | None]] = {u: dict(url_time[u]) for u in top}
    rest = len(per_url) - len(top)
    other = f"other ({rest:,} URLs)"
    if rest:
        series[other] = {t: max(0.0, (total or 0) - sum(url_time[u].get(t, 0) for u in top)) for t, total in pv.items()}
    line = _line(series, step, "page views", f"page views {_per(step)}" if step else "")
    if line is None:
        return None
    for s in line["series"]:  # a bucket where a URL had no view is 0 for it, not a gap
        s["values"] = [
            v if v is not None else (0 if pv.get(t) is not None else None)
            for t, v in zip(line["times"], s["values"], strict=True)
        ]
        s["hidden"] = s["label"] == other and rest > 0
    return {
        **line,
        "title": f"Page views of the top {len(top)} URLs over time",
        "note": f"{other}: the rest of each bucket's page views, hidden until you click it below the chart"
        if rest
        else "",
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
    over_time: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    for r in rows:
        if r["ad_id"] is not None or r["campaign_id"] is None:
            continue
        impressions[r["campaign_id"]] += r["impressions"]
        clicks[r["campaign_id"]] += r["clicks"]
        if r["bucket_start"] is not None:
            t = epoch_ms(r["bucket_start"])
            every = over_time["*"].get(t, (0.0, 0.0))
            over_time["*"][t] = (every[0] + r["impressions"], every[1] + r["clicks"])
            over_time[r["campaign_id"]][t] = (r["impressions"], r["clicks"])
    rate = {c: round(100 * clicks[c] / impressions[c], 3) for c in impressions if impressions[c]}
    busiest = sorted(impressions, key=lambda c: (-impressions[c], natural_key(c)))[:3]
    named = {"all campaigns": over_time["*"], **{c: over_time[c] for c in busiest}} if over_time else {}
    line = ctr_over_time(named, step)
    if line is not None:
        line["title"] = "CTR over time"
        merged = (
            f"One point {_per(line['step_ms'])} ({line['merged']} buckets merged)"
            if line["merged"] > 1
            else "One point a bucket"
        )
        line["note"] = (
            f"{merged}, so that a point rests on about {CTR_POINT_IMPRESSIONS} impressions of the least busy line; "
            f"windows with fewer than {CTR_LEAST_IMPRESSIONS} are left out; grey bars: impressions of all campaigns"
        )
    return {
        "line": line,
        "bars": {"title": "CTR per campaign over the range", **_bars(rate.items(), "%")},
        "ranked": None,
    }


def ctr_over_time(series: Mapping[str, Mapping[int, tuple[float, float]]], step: int | None) -> dict[str, Any] | None:
    """CTR lines from (impressions, clicks) per bucket start, readable: a bucket of a few impressions gives a CTR
    of 0 or 30%, noise, so consecutive buckets are merged into windows (a nice multiple of the bucket, aligned
    to it) long enough that the least busy series holds CTR_POINT_IMPRESSIONS impressions in an average window;
    a window with fewer than CTR_LEAST_IMPRESSIONS is a gap. Each point keeps its impressions and clicks
    ("context": [impressions, clicks]); "impressions" is the first series' impressions per window, for a chart
    to draw behind the lines."""
    if step is None or not series:
        return None
    every = {t for values in series.values() for t in values}
    if not every:
        return None
    span = (max(every) - min(every)) // step + 1
    thinnest = min(sum(i for i, _ in values.values()) for values in series.values())
    wanted = CTR_POINT_IMPRESSIONS * span / thinnest if thinnest else span
    merge = next((n for n in NICE_MERGES if n >= wanted), NICE_MERGES[-1])
    merge = max(1, min(merge, span))
    width = merge * step
    first, last = min(every) - min(every) % width, max(every) - max(every) % width
    times = list(range(first, last + width, width))
    out: list[dict[str, Any]] = []
    first_context: list[list[int] | None] = []
    for label, values in series.items():
        windows: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for t, (shown, clicked) in values.items():
            window = windows[t - t % width]
            window[0] += shown
            window[1] += clicked
        context: list[list[int] | None] = [
            [int(windows[t][0]), int(windows[t][1])] if t in windows else None for t in times
        ]
        first_context = first_context or context
        out.append(
            {
                "label": label,
                "unit": "%",
                "values": [
                    round(100 * c[1] / c[0], 2) if c is not None and c[0] >= CTR_LEAST_IMPRESSIONS else None
                    for c in context
                ],
                "context": context,
            }
        )
    if len(times) < 2:
        return None
    return {
        "times": times,
        "step_ms": width,
        "merged": merge,
        "y_title": f"CTR (%) {_per(width)}",
        "series": out,
        "impressions": {
            "label": f"impressions, {out[0]['label']}",
            "values": [c[0] if c else 0 for c in first_context],
        },
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


def top_per_bucket(rows: list[dict[str, Any]], n: int = TOP_URLS) -> list[dict[str, Any]]:
    """PV/UU rows read per bucket: its total row (``url`` null), its ``n`` URLs with the most page views, and
    a row summing the rest's page views (``other``: how many URLs it sums; its UU null, since users of
    several pages do not add up). Buckets in the rows' order."""
    buckets: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        buckets.setdefault(r["bucket_start"], []).append(r)
    out: list[dict[str, Any]] = []
    for bucket, members in buckets.items():
        out += [r for r in members if r["url"] is None]
        urls = sorted((r for r in members if r["url"] is not None), key=lambda r: (-r["pv"], natural_key(r["url"])))
        out += urls[:n]
        rest = urls[n:]
        if rest:
            out.append(
                {"bucket_start": bucket, "url": None, "pv": sum(r["pv"] for r in rest), "uu": None, "other": len(rest)}
            )
    return out


def table_page(
    rows: list[dict[str, Any]], columns: Iterable[str], params: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One page of ``rows`` for a table, from a query's ``sort`` (a column; ``-column`` descending), ``page``
    (from 1) and ``per_page`` (one of PAGE_SIZES). Sorted by :func:`natural_key` (stable: equal values keep
    the stored order), empty cells last; anything else asked (an unknown column, a page past the end, not a
    number) falls back to the nearest sensible page, never an error."""
    params = params or {}
    sort = str(params.get("sort") or "")
    descending = sort.startswith("-")
    column = sort.lstrip("-")
    if column not in set(columns):
        column, descending = "", False
    try:
        per_page = int(params.get("per_page", PER_PAGE))
    except ValueError:
        per_page = PER_PAGE
    if per_page not in PAGE_SIZES:
        per_page = PER_PAGE
    pages = max(1, -(-len(rows) // per_page))
    try:
        page = min(max(1, int(params.get("page", 1))), pages)
    except ValueError:
        page = 1
    ordered = rows
    if column:  # empty cells last either way: sorting by URL shows URLs first, not every bucket's total
        filled = sorted(
            (r for r in rows if r.get(column) is not None), key=lambda r: natural_key(r[column]), reverse=descending
        )
        ordered = filled + [r for r in rows if r.get(column) is None]
    start = (page - 1) * per_page
    return {
        "rows": ordered[start : start + per_page],
        "count": len(rows),
        "page": page,
        "pages": pages,
        "per_page": per_page,
        "first": start + 1 if rows else 0,
        "last": min(start + per_page, len(rows)),
        "sort": column,
        "descending": descending,
    }


def result_table(
    report: str, rows: list[dict[str, Any]], columns: Iterable[str], params: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The job page's table of a report's rows: :func:`table_page` of them, or for PV/UU by default of
    :func:`top_per_bucket` (``rows=all`` in the query for every row), with the links its headers, pager and
    view switch draw (query strings keeping the rest of what was asked)."""
    params = {k: str(params[k]) for k in params} if params else {}  # a QueryDict: each key's last value
    columns = tuple(columns)
    can_top = report == "pv_uu" and any(r.get("url") is not None for r in rows)
    view = "top" if can_top and params.get("rows") != "all" else "all"
    table = table_page(top_per_bucket(rows) if view == "top" else rows, columns, params)

    def link(**changes: Any) -> str:
        asked = {
            "rows": "all" if view == "all" and can_top else "",
            "sort": ("-" if table["descending"] else "") + table["sort"],
        }
        asked |= {"page": str(table["page"]), "per_page": str(table["per_page"])}
        asked |= {k: str(v) for k, v in changes.items()}
        return "?" + urlencode(
            {k: v for k, v in asked.items() if v and (k, v) not in (("page", "1"), ("per_page", str(PER_PAGE)))}
        )

    def sort_link(column: str) -> str:  # ascending first; again: descending; a third time: the stored order
        if table["sort"] != column:
            return link(sort=column, page=1)
        return link(sort="" if table["descending"] else f"-{column}", page=1)

    return {
        **table,
        "view": view,
        "can_top": can_top,
        "top_n": TOP_URLS,
        "headers": [
            {
                "column": c,
                "link": sort_link(c),
                "sorted": ("descending" if table["descending"] else "ascending") if table["sort"] == c else "none",
            }
            for c in columns
        ],
        "prev_link": link(page=table["page"] - 1) if table["page"] > 1 else None,
        "next_link": link(page=table["page"] + 1) if table["page"] < table["pages"] else None,
        "first_link": link(page=1) if table["page"] > 1 else None,
        "last_link": link(page=table["pages"]) if table["page"] < table["pages"] else None,
        "size_links": [
            {"size": n, "link": link(per_page=n, page=1), "current": n == table["per_page"]} for n in PAGE_SIZES
        ],
        "top_link": link(rows="", page=1, sort="") if can_top else None,
        "all_link": link(rows="all", page=1, sort="") if can_top else None,
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
