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
