"""The reports computed in plain Python, straight from the definitions in docs/analytics.md, to check Spark's
numbers against: no Spark, no shared code with analytics/ beyond the names of things."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

REQUIRED = {
    "page_view": ("ts", "user_id", "session_id", "url"),
    "impression": ("ts", "impression_id", "ad_id", "campaign_id", "user_id", "url"),
    "click": ("ts", "impression_id", "ad_id", "campaign_id", "user_id"),
    "share": ("ts", "user_id", "url", "network"),
}
SIZES = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "total": None}


@dataclass
class Reference:
    events: list[dict[str, Any]] = field(default_factory=list)
    malformed: Counter[str] = field(default_factory=Counter)
    rows_in: int = 0
    bytes_in: int = 0


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return None


def classify(value: bytes | None) -> tuple[str | None, dict[str, Any] | None]:
    """(reason, event): reason None for a valid event."""
    if not value:
        return "not_json", None
    try:
        obj = json.loads(value)
    except ValueError:
        return "not_json", None
    if not isinstance(obj, dict):
        return "not_json", None
    kind = obj.get("type")
    if kind not in REQUIRED:
        return "unknown_type", None
    if any(obj.get(name) is None for name in REQUIRED[kind]) or _whole(obj.get("ts")) is None:
        return "missing_field", None
    event: dict[str, Any] = {k: (v if isinstance(v, str) or v is None else json.dumps(v)) for k, v in obj.items()}
    event["ts"] = _whole(obj["ts"])
    return None, event


def read(records: list[tuple[bytes | None, bytes | None, int]], start: int | None, end: int | None) -> Reference:
    """``records``: (key, value, record timestamp ms); keeps those in [start, end)."""
    ref = Reference()
    for key, value, ts in records:
        if (start is not None and ts < start) or (end is not None and ts >= end):
            continue
        ref.rows_in += 1
        ref.bytes_in += len(key or b"") + len(value or b"")
        reason, event = classify(value)
        if reason or event is None:
            ref.malformed[reason or "?"] += 1
        else:
            ref.events.append(event)
    return ref


def bucket_of(ts: int, bucket: str) -> str | None:
    size = SIZES[bucket]
    if size is None:
        return None
    start = ts - ts % size
    return datetime.fromtimestamp(start / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pv_uu(ref: Reference, bucket: str) -> dict[tuple[str | None, str | None], tuple[int, int]]:
    """{(bucket_start, url or None for all): (pv, uu)}."""
    views: dict[tuple[str | None, str | None], int] = Counter()
    users: dict[tuple[str | None, str | None], set[str]] = defaultdict(set)
    for e in ref.events:
        if e["type"] != "page_view":
            continue
        b = bucket_of(e["ts"], bucket)
        for key in ((b, e["url"]), (b, None)):
            views[key] += 1
            users[key].add(e["user_id"])
    return {k: (views[k], len(users[k])) for k in views}


def keywords(ref: Reference, bucket: str, top_n: int) -> dict[tuple[str | None, int], tuple[str, int]]:
    """{(bucket_start, rank): (keyword, count)}; ties ranked by keyword."""
    counts: dict[str | None, Counter[str]] = defaultdict(Counter)
    for e in ref.events:
        if e["type"] == "page_view" and e.get("keyword"):
            counts[bucket_of(e["ts"], bucket)][e["keyword"]] += 1
    out = {}
    for b, c in counts.items():
        ranked = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]
        for rank, (word, n) in enumerate(ranked, start=1):
            out[(b, rank)] = (word, n)
    return out


def ctr(
    ref: Reference, bucket: str
) -> tuple[dict[tuple[str | None, str, str | None], tuple[int, int]], dict[str, int]]:
    """({(bucket_start, campaign, ad or None): (impressions, clicks)}, {campaign: unmatched clicks})."""
    first: dict[str, dict[str, Any]] = {}
    for e in sorted((e for e in ref.events if e["type"] == "impression"), key=lambda e: e["ts"]):
        first.setdefault(e["impression_id"], e)
    clicks_of: Counter[str] = Counter()
    click_campaigns: dict[str, list[str]] = defaultdict(list)
    for e in ref.events:
        if e["type"] == "click":
            clicks_of[e["impression_id"]] += 1
            click_campaigns[e["impression_id"]].append(e["campaign_id"])
    table: dict[tuple[str | None, str, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for imp_id, imp in first.items():
        b = bucket_of(imp["ts"], bucket)
        for key in ((b, imp["campaign_id"], imp["ad_id"]), (b, imp["campaign_id"], None)):
            table[key][0] += 1
            table[key][1] += clicks_of.get(imp_id, 0)
    unmatched: Counter[str] = Counter()
    for imp_id, n in clicks_of.items():
        if imp_id not in first:
            unmatched[min(click_campaigns[imp_id])] += n
    return {k: (v[0], v[1]) for k, v in table.items()}, dict(unmatched)


def shares(ref: Reference, bucket: str) -> dict[tuple[str | None, str, str], int]:
    out: Counter[tuple[str | None, str, str]] = Counter()
    for e in ref.events:
        if e["type"] == "share":
            out[(bucket_of(e["ts"], bucket), e["url"], e["network"])] += 1
    return dict(out)
