"""A job's result as its page draws it, from a real job run on the session's Spark: the rows a page at a time,
sorted over every row (numbers as numbers, URLs in natural order), PV/UU's top URLs per bucket with the rest
summed, the top URLs' lines and the rest adding up to each bucket's PV, the CTR line's merged windows; the
downloads keep every row and odd query strings never break the page."""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from typing import Any

import pytest
from django.test import Client

from analytics.present import natural_key
from broker.demo.web import web_events
from console.background import job_process, jobs
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db, pytest.mark.spark]

HOUR = 3_600_000
BASE = (int(time.time() * 1000) // HOUR - 4) * HOUR


@pytest.fixture(scope="module")
def traffic(kafka_cluster: Any) -> tuple[str, list[dict[str, Any]]]:
    topic = create_topic(unique("results-web"), partitions=2)
    events = list(web_events(6000, BASE, BASE + 3 * HOUR, seed=11, users=400))
    produce_timed(topic, [(e.key, e.value, e.timestamp_ms) for e in events])
    return topic, [json.loads(e.value) for e in events]


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)


def run(client: Client, spark: Any, report: str, topic: str, bucket: str) -> int:
    body = {"report": report, "topics": [topic], "bucket": bucket, "from": BASE, "to": BASE + 3 * HOUR}
    answer = client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json")
    job_id = int(answer.json()["id"])
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    return job_id


def test_pv_uu_rows_come_a_page_at_a_time_sorted_over_all_of_them(spark: Any, traffic: Any, no_spawn: None) -> None:
    topic, events = traffic
    client = logged_in("operator")
    job_id = run(client, spark, "pv_uu", topic, "hour")
    url = f"/clusters/local/analytics/jobs/{job_id}/"
    views: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in events:
        if e["type"] == "page_view":
            views[e["ts"] - e["ts"] % HOUR][e["url"]] += 1
    every = client.get(f"/api/jobs/{job_id}/result/").json()["rows"]
    assert len(every) == sum(len(u) + 1 for u in views.values())  # a row per URL per bucket, and the bucket's
    # The stored order: bucket, then URLs in natural order.
    first_bucket = [r["url"] for r in every if r["bucket_start"] == every[0]["bucket_start"]]
    assert first_bucket[0] is None
    assert first_bucket[1:] == sorted(first_bucket[1:], key=natural_key)

    # By default: each bucket's total, its top 5 URLs and one row of the rest.
    page = client.get(url)
    table = page.context["table"]
    assert table["view"] == "top"
    assert table["count"] == sum(1 + min(5, len(u)) + (len(u) > 5) for u in views.values())
    html = page.content.decode()
    shown = table["rows"]
    top = sorted(views[BASE].items(), key=lambda p: (-p[1], natural_key(p[0])))
    assert [(r["url"], r["pv"]) for r in shown[1:6]] == top[:5]
    assert shown[6]["other"] == len(top) - 5
    assert shown[6]["pv"] == sum(n for _, n in top[5:])
    assert f"{len(top) - 5:,} other URLs" in html

    # Every row, 25 a page, sorted by PV (descending) over all of them, not within a page.
    page2 = client.get(url, {"rows": "all", "sort": "-pv", "per_page": "25", "page": "2"}).context["table"]
    assert page2["count"] == len(every)
    assert page2["pages"] == -(-len(every) // 25)
    ranked = sorted((r["pv"] for r in every), reverse=True)
    assert [r["pv"] for r in page2["rows"]] == ranked[25:50]
    assert (page2["first"], page2["last"]) == (26, 50)
    links = {h["column"]: h["link"] for h in page2["headers"]}
    assert links["pv"] == "?rows=all&per_page=25"  # sorted descending: a third click returns the stored order
    assert links["url"] == "?rows=all&sort=url&per_page=25"
    assert page2["next_link"] == "?rows=all&sort=-pv&page=3&per_page=25"
    # URLs in natural order: /products/2 before /products/10 (numbers as numbers)
    by_url: list[dict[str, Any]] = []
    for n in range(1, -(-len(every) // 250) + 1):  # every page of 250
        by_url += client.get(url, {"rows": "all", "sort": "url", "per_page": "250", "page": n}).context["table"]["rows"]
    assert len(by_url) == len(every)
    named = [r["url"] for r in by_url if r["url"] is not None]
    assert named == sorted(named, key=natural_key)
    numbered = [int(u.rsplit("/", 1)[1]) for u in dict.fromkeys(named) if re.fullmatch(r"/products/\d+", u)]
    assert len(numbered) > 2
    assert numbered == sorted(numbered)

    # The top URLs' lines and the rest add up to each bucket's PV.
    area = page.context["charts"]["area"]
    totals = [sum(v or 0 for v in point) for point in zip(*(s["values"] for s in area["series"]), strict=True)]
    assert totals == [sum(views[t].values()) for t in area["times"]]
    assert area["series"][-1]["label"].startswith("other (")

    # Odd asks fall back to a page, never an error; the downloads keep every row.
    for odd in ({"page": "-3"}, {"page": "x", "per_page": "1000000"}, {"sort": "nope;drop"}, {"rows": "<b>"}):
        assert client.get(url, odd).status_code == 200
    csv_lines = client.get(f"{url}result.csv").content.decode().splitlines()
    assert len(csv_lines) == len(every) + 1
    # The page's HTML: sortable headers, the pager's position
    assert 'aria-sort="none"' in html
    assert f"of {table['count']:,} · page 1 of {table['pages']:,}" in html


def test_the_ctr_line_merges_buckets_into_points_of_enough_impressions(
    spark: Any, traffic: Any, no_spawn: None
) -> None:
    topic, events = traffic
    client = logged_in("operator")
    job_id = run(client, spark, "ctr", topic, "minute")
    page = client.get(f"/clusters/local/analytics/jobs/{job_id}/")
    line = page.context["charts"]["line"]
    assert line["series"][0]["label"] == "all campaigns"
    impressions = {e["impression_id"]: e["ts"] for e in events if e["type"] == "impression"}
    assert sum(line["impressions"]["values"]) == len(impressions)
    assert line["merged"] > 1  # a few impressions a minute: minutes merged
    assert line["step_ms"] == line["merged"] * 60_000
    for value, context in zip(line["series"][0]["values"], line["series"][0]["context"], strict=True):
        if value is not None:
            assert context[0] >= 100
            assert value == round(100 * context[1] / context[0], 2)
    assert f"({line['merged']} buckets merged), so that a point rests on" in page.content.decode()
