"""Chart data from a report's rows: every bucket of the span on the time axis, gaps as nulls."""

from __future__ import annotations

from typing import Any

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
    assert line["title"] == "Page views and unique users over time"
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
    assert [s["label"] for s in charts["line"]["series"]] == ["all campaigns", "c1", "c2"]  # busiest first


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


def test_natural_order_puts_numbers_by_value_and_names_with_numbers_in_reading_order() -> None:
    from analytics.present import natural_key

    urls = ["/p10", "/p2", "/p1", "/P3", "/", "/p11", "/about", None, "/p02"]
    assert sorted(urls, key=natural_key) == [None, "/", "/about", "/p1", "/p02", "/p2", "/P3", "/p10", "/p11"]
    assert sorted([10, 9.5, 100, None, 2], key=natural_key) == [None, 2, 9.5, 10, 100]
    stamps = ["2026-11-27T10:00:00Z", "2026-11-27T09:00:00Z", None]
    assert sorted(stamps, key=natural_key) == [None, "2026-11-27T09:00:00Z", "2026-11-27T10:00:00Z"]


def test_the_stored_order_is_natural_too() -> None:
    from analytics.runner import _order

    rows = [{"bucket_start": "b", "url": u, "pv": 1, "uu": 1} for u in ("/p10", "/p2", None, "/p1")]
    rows.sort(key=_order(("bucket_start", "url")))
    assert [r["url"] for r in rows] == [None, "/p1", "/p2", "/p10"]


def test_a_table_page_is_sorted_over_every_row_and_bad_asks_fall_back() -> None:
    from analytics.present import table_page

    rows: list[dict[str, Any]] = [{"url": f"/p{n}", "pv": (n * 37) % 101} for n in range(1, 121)]
    first = table_page(rows, ("url", "pv"))
    assert (first["page"], first["pages"], first["per_page"], first["first"], first["last"]) == (1, 3, 50, 1, 50)
    assert first["rows"] == rows[:50]  # no sort asked: the stored order
    by_pv = table_page(rows, ("url", "pv"), {"sort": "-pv", "page": "1", "per_page": "25"})
    assert [r["pv"] for r in by_pv["rows"]] == sorted((r["pv"] for r in rows), reverse=True)[:25]
    assert by_pv["descending"]
    assert by_pv["sort"] == "pv"
    by_url = table_page(rows, ("url", "pv"), {"sort": "url", "page": "3"})
    assert [r["url"] for r in by_url["rows"]] == [f"/p{n}" for n in range(101, 121)]
    assert (by_url["first"], by_url["last"]) == (101, 120)
    odd = table_page(rows, ("url", "pv"), {"sort": "nope", "page": "99", "per_page": "7"})
    assert (odd["sort"], odd["page"], odd["per_page"]) == ("", 3, 50)
    assert table_page(rows, ("url", "pv"), {"page": "x"})["page"] == 1
    assert table_page([], ("url",))["pages"] == 1
    with_totals = [{"url": None, "pv": 9}, {"url": "/p10", "pv": 1}, {"url": None, "pv": 8}, {"url": "/p9", "pv": 2}]
    for sort in ("url", "-url"):
        urls = [r["url"] for r in table_page(with_totals, ("url", "pv"), {"sort": sort})["rows"]]
        assert urls[2:] == [None, None]  # the totals after the URLs, both ways
    assert [r["url"] for r in table_page(with_totals, ("url", "pv"), {"sort": "url"})["rows"]][:2] == ["/p9", "/p10"]


def test_top_urls_per_bucket_with_the_rest_summed() -> None:
    from analytics.present import top_per_bucket

    rows = [{"bucket_start": iso(T0), "url": None, "pv": 21, "uu": 9}]
    rows += [{"bucket_start": iso(T0), "url": f"/p{n}", "pv": n, "uu": 1} for n in range(1, 7)]
    rows += [
        {"bucket_start": iso(T0 + H), "url": None, "pv": 2, "uu": 2},
        {"bucket_start": iso(T0 + H), "url": "/", "pv": 2, "uu": 2},
    ]
    shown = top_per_bucket(rows, n=3)
    assert [(r["url"], r["pv"], r.get("other")) for r in shown] == [
        (None, 21, None),
        ("/p6", 6, None),
        ("/p5", 5, None),
        ("/p4", 4, None),
        (None, 6, 3),  # /p1 + /p2 + /p3
        (None, 2, None),
        ("/", 2, None),
    ]
    assert shown[4]["uu"] is None


def test_the_top_urls_over_time_and_the_rest_add_up_to_each_buckets_page_views() -> None:
    rows = []
    for b in range(3):
        urls = {f"/p{n}": n + b for n in range(1, 9)}
        rows.append({"bucket_start": iso(T0 + b * H), "url": None, "pv": sum(urls.values()), "uu": 5})
        rows += [{"bucket_start": iso(T0 + b * H), "url": u, "pv": v, "uu": 1} for u, v in urls.items()]
    area = chart_data("pv_uu", "hour", rows)["area"]
    assert [s["label"] for s in area["series"]] == ["/p8", "/p7", "/p6", "/p5", "/p4", "other (3 URLs)"]
    for i, b in enumerate(range(3)):
        assert sum(s["values"][i] for s in area["series"]) == sum(n + b for n in range(1, 9))
    assert area["series"][-1]["values"] == [6, 9, 12]  # /p1../p3
    assert area["y_title"] == "page views per hour"
    assert [s["hidden"] for s in area["series"]] == [False] * 5 + [True]  # the long tail would squash the rest


def test_ctr_over_time_merges_thin_buckets_so_each_point_rests_on_enough_impressions() -> None:
    from analytics.present import CTR_POINT_IMPRESSIONS, ctr_over_time

    m = 60_000
    # 120 minutes of 50 impressions each, 1 click a minute: per minute the CTR is 2%, but clicks come in
    # bursts (3 one minute, 0 the next two), which per minute looks like 6%, 0, 0.
    series = {"all": {T0 + i * m: (50.0, 3.0 if i % 3 == 0 else 0.0) for i in range(120)}}
    line = ctr_over_time(series, m)
    assert line is not None
    merge = line["merged"]
    assert merge * 50 >= CTR_POINT_IMPRESSIONS
    assert merge == 10
    assert line["step_ms"] == 10 * m
    assert len(line["times"]) == 12
    values = [v for v in line["series"][0]["values"] if v is not None]
    assert values
    assert all(abs(v - 2.0) <= 0.5 for v in values), values
    assert line["series"][0]["context"][:2] == [[500, 12], [500, 9]]  # minutes 0, 3, 6, 9; then 12, 15, 18
    assert line["series"][0]["values"][:2] == [2.4, 1.8]
    assert sum(line["impressions"]["values"]) == 6000


def test_ctr_over_time_leaves_thin_windows_out_and_busy_buckets_alone() -> None:
    from analytics.present import ctr_over_time

    busy = {T0 + i * H: (1000.0, 20.0) for i in range(5)}
    busy[T0 + 5 * H] = (10.0, 5.0)  # a thin last hour: no 50% spike
    line = ctr_over_time({"c1": busy}, H)
    assert line is not None
    assert line["merged"] == 1
    assert line["series"][0]["values"] == [2.0, 2.0, 2.0, 2.0, 2.0, None]
    assert line["series"][0]["context"][-1] == [10, 5]
