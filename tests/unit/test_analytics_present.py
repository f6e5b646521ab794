"""Chart data from a report's rows: every bucket of the span on the time axis, gaps as nulls."""

from __future__ import annotations

from analytics.present import chart_data, timeline

H = 3_600_000
T0 = 1_795_000_000_000 - 1_795_000_000_000 % H


def iso(ms: int) -> str:
    from analytics.runner import iso as to_iso

    return to_iso(ms)


def test_the_time_axis_holds_every_bucket_and_missing_ones_are_gaps() -> None:
    rows = [
        {"bucket_start": iso(T0), "url": None, "pv": 10, "uu": 4},
        {"bucket_start": iso(T0), "url": "/a", "pv": 10, "uu": 4},
        {"bucket_start": iso(T0 + 3 * H), "url": None, "pv": 7, "uu": 2},
        {"bucket_start": iso(T0 + 3 * H), "url": "/b", "pv": 7, "uu": 2},
    ]
    line = chart_data("pv_uu", "hour", rows)["line"]
    assert line["times"] == [T0, T0 + H, T0 + 2 * H, T0 + 3 * H]
    assert line["series"][0] == {"label": "PV", "unit": "", "values": [10, None, None, 7]}
    assert line["series"][1]["values"] == [4, None, None, 2]
    bars = chart_data("pv_uu", "hour", rows)["bars"]
    assert bars["labels"] == ["/a", "/b"]
    assert bars["values"] == [10, 7]


def test_a_total_bucket_draws_no_line() -> None:
    rows = [{"bucket_start": None, "url": None, "pv": 3, "uu": 2}, {"bucket_start": None, "url": "/", "pv": 3, "uu": 2}]
    assert chart_data("pv_uu", "total", rows)["line"] is None
    assert timeline({}, H) == []


def test_ctr_bars_are_each_campaigns_clicks_over_its_impressions_in_percent() -> None:
    rows = [
        {"bucket_start": iso(T0), "campaign_id": "c1", "ad_id": None, "impressions": 100, "clicks": 3, "ctr": 0.03},
        {
            "bucket_start": iso(T0 + H),
            "campaign_id": "c1",
            "ad_id": None,
            "impressions": 300,
            "clicks": 1,
            "ctr": 1 / 300,
        },
        {"bucket_start": iso(T0), "campaign_id": "c1", "ad_id": "a", "impressions": 100, "clicks": 3, "ctr": 0.03},
        {"bucket_start": iso(T0), "campaign_id": "c2", "ad_id": None, "impressions": 10, "clicks": 5, "ctr": 0.5},
    ]
    charts = chart_data("ctr", "hour", rows)
    assert charts["bars"]["labels"] == ["c2", "c1"]
    assert charts["bars"]["values"] == [50.0, 1.0]
    assert [s["label"] for s in charts["line"]["series"]] == ["c1", "c2"]  # busiest campaign first


def test_keywords_are_ranked_over_the_whole_range_with_their_share_of_the_first() -> None:
    rows = [
        {"bucket_start": iso(T0), "keyword": "kafka", "count": 3, "rank": 1},
        {"bucket_start": iso(T0 + H), "keyword": "kafka", "count": 1, "rank": 2},
        {"bucket_start": iso(T0 + H), "keyword": "spark", "count": 2, "rank": 1},
    ]
    ranked = chart_data("keywords", "hour", rows)["ranked"]
    assert ranked == [{"label": "kafka", "value": 4, "share": 1.0}, {"label": "spark", "value": 2, "share": 0.5}]


def test_live_figures_fill_the_last_hour_and_sum_the_last_30_minutes() -> None:
    from analytics.present import live_summary

    m = 60_000
    now = T0 + 59 * m + 30_000  # half way through the hour's last minute
    rows = [
        (T0 + 59 * m, "pv", "*", 7, 5),
        (T0 + 58 * m, "pv", "*", 4, 3),
        (T0 + 10 * m, "pv", "*", 100, 50),  # older than 30 minutes: on the line, not in the recent sum
        (T0 + 59 * m, "pv", "/a", 7, 5),
        (T0 + 59 * m, "keyword", "kafka", 3, 2),
        (T0 + 58 * m, "keyword", "spark", 3, 1),
        (T0 + 59 * m, "impressions", "c1", 50, 40),
        (T0 + 59 * m, "clicks", "c1", 2, 2),
        (T0 + 59 * m, "clicks", "c2", 1, 1),  # clicks without impressions in the window: no CTR
        (T0 + 59 * m, "shares", "reddit", 2, 2),
    ]
    got = live_summary(rows, now)
    assert got["line"]["times"][0] == T0
    assert got["line"]["times"][-1] == T0 + 59 * m
    pv = got["line"]["series"][0]["values"]
    assert (pv[10], pv[58], pv[59]) == (100, 4, 7)
    assert pv[11] is None
    assert (got["pv_now"], got["uu_now"], got["pv_recent"]) == (7, 5, 11)
    assert got["keywords"] == [
        {"label": "kafka", "value": 3, "share": 1.0},
        {"label": "spark", "value": 3, "share": 1.0},
    ]
    assert got["ctr"] == [
        {"campaign": "c1", "impressions": 50, "clicks": 2, "ctr": 0.04},
        {"campaign": "c2", "impressions": 0, "clicks": 1, "ctr": None},
    ]
    assert got["shares"] == [{"label": "reddit", "value": 2}]
