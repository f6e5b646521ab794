"""Analytics in real Chromium against a real console, whose jobs run in processes of their own with
real Spark: a PV/UU job started from the form, its progress bar moving and its chart drawn; a job
cancelled from its page, its process gone."""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError

from analytics.present import natural_key
from broker.demo.web import backfill
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.browser, pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000


@pytest.fixture(scope="module")
def busy_topic(kafka_cluster: Any) -> str:
    topic = create_topic(unique("browser-web"), partitions=3)
    backfill(BOOTSTRAP.split(","), topic, 400_000, span_ms=6 * HOUR, seed=21, acks=-1)  # all: the job reads them all
    return topic


def job_processes(job_id: int) -> list[int]:
    """Pids of processes running ``manage.py run_job <job_id>``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run_job" in args and str(job_id).encode() in args:
            found.append(int(proc.name))
    return found


def api_status(page: Any, console_url: str, job_id: int) -> str:
    return str(page.request.get(f"{console_url}/api/jobs/{job_id}/").json()["status"])


def start_job(page: Any, console_url: str, topic: str, bucket: str = "minute", report: str = "pv_uu") -> int:
    page.goto(f"{console_url}/clusters/local/analytics/")
    page.select_option("#report", report)
    page.fill("#topics", topic)
    page.select_option("#range", "all")
    page.select_option("#bucket", bucket)
    page.click("form.report-form button[type=submit]")
    page.wait_for_url(re.compile(r"/analytics/jobs/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


@pytest.mark.timeout(600)
def test_a_pv_uu_job_shows_its_progress_and_draws_its_chart(
    page: Any, console_url: str, busy_topic: str, artifacts: Path, spark_server: str
) -> None:
    job_id = start_job(page, console_url, busy_topic)
    seen: list[float] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:  # the page reloads itself when the job ends
            value = page.evaluate("() => { const b = document.getElementById('job-progress'); return b && b.value; }")
            if value is not None:
                seen.append(float(value))
                if 0 < seen[-1] < 1 and len(seen) % 5 == 0:
                    page.screenshot(path=str(artifacts / "analytics-running.png"))
            if page.query_selector("#job-result") is not None:
                break
        except PlaywrightError:
            pass
        if api_status(page, console_url, job_id) in ("failed", "cancelled"):
            break
        time.sleep(0.2)
    page.wait_for_selector("#job-result", timeout=30_000)
    assert page.get_attribute("#job-status", "data-status") == "succeeded", page.inner_text("#job-status")
    moving = sorted(set(v for v in seen if 0 < v < 1))
    assert moving, f"the progress bar never stood between 0 and 1: {sorted(set(seen))}"
    page.wait_for_function("() => window.Chart && Chart.getChart(document.getElementById('line-chart'))")
    points = page.evaluate(
        "() => Chart.getChart(document.getElementById('line-chart')).data.datasets[0].data.filter(p => p.y > 0).length"
    )
    assert points >= 60  # minute buckets over the events' six hours, drawn
    assert "400,000" in page.inner_text("#job-status")  # rows read
    assert page.query_selector("table.result-rows tbody tr") is not None
    page.screenshot(path=str(artifacts / "analytics-done.png"), full_page=False)
    # The top URLs over time, and the rest (hidden at first) adding up with them to each minute's PV.
    page.wait_for_function("() => Chart.getChart(document.getElementById('area-chart'))")
    stacked = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById('area-chart'));
                   const pv = Chart.getChart(document.getElementById('line-chart')).data.datasets[0].data;
                   const sum = (i) => c.data.datasets.reduce((s, d) => s + (d.data[i].y || 0), 0);
                   return {labels: c.data.datasets.map(d => d.label), y: c.options.scales.y.title.text,
                           hidden: c.data.datasets.map((d, i) => !c.isDatasetVisible(i)),
                           sums: pv.map((p, i) => [p.y, sum(i)])}; }"""
    )
    assert len(stacked["labels"]) == 6
    assert stacked["labels"][-1].startswith("other (")
    assert stacked["hidden"] == [False] * 5 + [True]
    assert stacked["y"] == "page views per minute"
    assert "Page views and unique users over time" in page.inner_text("#job-result")
    assert all(total is None or total == parts for total, parts in stacked["sums"])
    # The rows: a page of 50 of them (each minute's total, its top 5 URLs and the rest), not every row at once.
    page.locator("section.chart-card", has=page.locator("#area-chart")).screenshot(
        path=str(artifacts / "analytics-top-urls.png")
    )
    page.locator("#result-table").screenshot(path=str(artifacts / "analytics-rows.png"))
    assert page.locator("table.result-rows tbody tr").count() == 50
    assert page.locator("tr.other-row").count() >= 5
    position = page.inner_text("#rows-position")
    assert position.startswith("rows 1–50 of ")
    # Next page: only the table changes (the charts stay drawn, no reload).
    page.evaluate("() => { window.notReloaded = true; }")
    page.click("#rows-next")
    page.wait_for_function("() => document.getElementById('result-table').dataset.page === '2'")
    assert page.evaluate("() => window.notReloaded === true")
    assert page.inner_text("#rows-position").startswith("rows 51–100 of ")
    # Every row, sorted by PV from the most: sorted over all of them, numbers as numbers.
    page.click("#show-all-rows")
    page.wait_for_function("() => document.getElementById('result-table').dataset.view === 'all'")
    for expected in ("pv", "-pv"):  # ascending, then descending
        page.click("th a[data-column=pv]")
        page.wait_for_function("(s) => document.getElementById('result-table').dataset.sort === s", arg=expected)
    pvs = page.evaluate(
        "() => [...document.querySelectorAll('table.result-rows tbody tr')]"
        ".map(r => Number(r.cells[2].innerText.replace(/,/g, '')))"
    )
    every = page.request.get(f"{console_url}/api/jobs/{job_id}/result/").json()["rows"]
    assert pvs == sorted((r["pv"] for r in every), reverse=True)[:50]  # the first of every row, not of a page
    assert page.get_attribute("th:has(a[data-column=pv])", "aria-sort") == "descending"
    page.click("th a[data-column=url]")
    page.wait_for_function("() => document.getElementById('result-table').dataset.sort === 'url'")
    urls = page.evaluate(
        "() => [...document.querySelectorAll('table.result-rows tbody tr')].map(r => r.cells[1].innerText)"
    )
    assert "all" not in urls  # each bucket's total after the URLs
    assert urls == sorted(urls, key=natural_key)
    assert page.evaluate("() => window.notReloaded === true")
    page.locator("#result-table").screenshot(path=str(artifacts / "analytics-rows-sorted.png"))
    assert page.errors == []
    assert not job_processes(job_id)


@pytest.mark.timeout(600)
def open_finished_job(page: Any, url: str) -> None:
    """Open a finished job's page. The page the test is on may be that page, which reloads itself when it sees
    the job finish (static/js/analytics.js): a navigation of ours at that moment is interrupted by its reload
    (a CI run met it), which lands on the same page; then wait for that one to load."""
    try:
        page.goto(url)
    except PlaywrightError as exc:
        if "interrupted by another navigation" not in str(exc):
            raise
        page.wait_for_url(url)
        page.wait_for_load_state("load")


def test_a_ctr_job_draws_merged_points_with_their_impressions(
    page: Any, console_url: str, busy_topic: str, artifacts: Path, spark_server: str
) -> None:
    job_id = start_job(page, console_url, busy_topic, bucket="minute", report="ctr")
    deadline = time.monotonic() + 240
    while api_status(page, console_url, job_id) not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, "the CTR job did not finish in 4 minutes"
        time.sleep(1)
    open_finished_job(page, f"{console_url}/clusters/local/analytics/jobs/{job_id}/")
    assert page.get_attribute("#job-status", "data-status") == "succeeded", page.inner_text("#job-status")
    page.wait_for_function("() => window.Chart && Chart.getChart(document.getElementById('line-chart'))")
    drawn = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById('line-chart'));
                   return {labels: c.data.datasets.map(d => d.label), y: c.options.scales.y.title.text,
                           hidden: c.data.datasets.map((d, i) => !c.isDatasetVisible(i)),
                           y2: c.options.scales.y2.title.text,
                           points: c.data.datasets[0].data.filter(p => p.y !== null).length}; }"""
    )
    assert drawn["labels"][0] == "all campaigns"
    assert drawn["labels"][-1].startswith("impressions")
    assert drawn["y"].startswith("CTR (%) per ")
    assert drawn["y2"] == "impressions"
    assert drawn["points"] >= 6
    assert "buckets merged), so that a point rests on about 500 impressions" in page.inner_text("#line-chart-note")
    page.locator("#line-chart").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "analytics-ctr.png"))
    assert page.errors == []


def test_cancel_stops_a_running_job_and_its_process(
    page: Any, console_url: str, busy_topic: str, spark_server: str
) -> None:
    job_id = start_job(page, console_url, busy_topic, bucket="minute")
    page.wait_for_function(
        "() => { const b = document.getElementById('job-progress'); return b && Number(b.value) > 0; }", timeout=120_000
    )
    assert job_processes(job_id)
    page.click("#cancel-job")
    deadline = time.monotonic() + 60
    while api_status(page, console_url, job_id) != "cancelled" and time.monotonic() < deadline:
        time.sleep(0.3)
    open_finished_job(page, f"{console_url}/clusters/local/analytics/jobs/{job_id}/")
    assert page.get_attribute("#job-status", "data-status") == "cancelled"
    assert "Cancelled" in page.inner_text("#job-status")
    assert page.query_selector("#cancel-job") is None
    deadline = time.monotonic() + 30
    while job_processes(job_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not job_processes(job_id), "the job's process is still running after its cancel"
    answer = page.request.get(f"{console_url}/api/jobs/{job_id}/").json()
    assert answer["status"] == "cancelled"
    assert answer["cancel_requested"] is True


@pytest.mark.timeout(600)  # two Spark starts (the query and its restart) on two busy cores
def test_live_pv_rises_as_events_arrive_and_survives_a_crash_without_counting_twice(
    page: Any, console_url: str, kafka_cluster: Any, artifacts: Path
) -> None:
    import json
    import os
    import signal

    from kafka import KafkaProducer

    from broker.demo.web import web_events

    topic = create_topic(unique("live-web"), partitions=2)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", linger_ms=5)
    views = 0

    def write(seconds: float, per_second: int = 40) -> None:
        """Events of now, as a site would send them."""
        nonlocal views
        end = time.monotonic() + seconds
        seed = int(time.time())
        while time.monotonic() < end:
            now = int(time.time() * 1000)
            for e in web_events(per_second // 4, now, now + 250, seed=seed, users=300):
                producer.send(topic, key=e.key, value=e.value, timestamp_ms=e.timestamp_ms)
                views += json.loads(e.value)["type"] == "page_view"
            seed += 1
            time.sleep(0.25)
        producer.flush(timeout=30)

    def shown() -> int:
        return int(page.get_attribute("#live-figures", "data-pv-recent") or 0)

    def live() -> dict[str, Any]:
        return dict(page.request.get(f"{console_url}/api/clusters/local/analytics/live/").json())

    try:
        page.goto(f"{console_url}/clusters/local/analytics/live/")
        page.fill("#live-topics", topic)
        page.click("#live-start")
        page.wait_for_selector("#live-stop")
        # The figure rises on the open page while events are written.
        seen: list[int] = []
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and len({v for v in seen if v > 0}) < 3:
            write(2)
            with contextlib.suppress(PlaywrightError):
                seen.append(shown())
        rising = [v for v in seen if v > 0]
        assert len(set(rising)) >= 3, f"the live PV figure did not rise: {seen}"
        assert rising == sorted(rising)
        # The chart came with the pushed figures (the page was last loaded before there were any).
        assert page.locator("#live-chart-card").is_visible()
        drawn = page.evaluate(
            "() => Chart.getChart(document.getElementById('live-chart')).data.datasets[0].data"
            ".reduce((s, p) => s + (p.y || 0), 0)"
        )
        assert drawn > 0
        page.screenshot(path=str(artifacts / "analytics-live.png"))
        # Wait until every view written so far is counted, then crash the query's process (and its JVM).
        deadline = time.monotonic() + 60
        while live()["figures"]["pv_recent"] != views and time.monotonic() < deadline:
            time.sleep(0.5)
        assert live()["figures"]["pv_recent"] == views
        pid = live()["pid"]
        os.killpg(pid, signal.SIGKILL)
        write(6)
        # Reading the live figures notices the dead process and starts it again from its checkpoint.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = live()
            if state["figures"]["pv_recent"] >= views and state["status"] == "running" and state["pid"] != pid:
                break
            time.sleep(1)
        time.sleep(5)  # a batch replayed after the crash would show here as a second count
        state = live()
        assert state["restarts"] == 1
        assert state["figures"]["pv_recent"] == views, "events counted twice or lost across the restart"
        # The same figures went to the output topic: the last value written for each minute's PV adds up too.
        assert output_topic_pv(state["output_topic"]) == views
    finally:
        producer.close(timeout=10)
        page.request.post(
            f"{console_url}/api/clusters/local/analytics/live/",
            data=json.dumps({"action": "stop"}),
            headers={"Content-Type": "application/json", "X-CSRFToken": csrf(page)},
        )
    assert live()["status"] == "stopped"


def output_topic_pv(topic: str) -> int:
    """The page views in the live query's output topic: for each minute, the last whole count written."""
    import json

    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=BOOTSTRAP.split(","), auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    try:
        latest: dict[int, int] = {}
        for record in consumer:
            row = json.loads(record.value)
            if row["metric"] == "pv" and row["key"] == "*":
                latest[row["minute_ms"]] = row["count"]
        return sum(latest.values())
    finally:
        consumer.close()


def csrf(page: Any) -> str:
    return str(next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken"))


def test_the_live_chart_is_drawn_from_the_first_pushed_figures(
    page: Any, console_url: str, tmp_path_factory: pytest.TempPathFactory, artifacts: Path
) -> None:
    """The page opens with no figures (the chart's card hidden); figures then stored, as the live query stores
    them, come in the next push, and the chart is drawn from them without a reload, and follows later ones."""
    import sqlite3

    port = console_url.rsplit(":", 1)[1]
    (db,) = {  # the database of the console serving console_url (console-varcurrent is a link to it)
        log.parent.resolve() / "db.sqlite3"
        for log in tmp_path_factory.getbasetemp().glob("console-var*/daphne.log")
        if f"127.0.0.1:{port}" in log.read_text(errors="replace")
    }
    minute = int(time.time() * 1000) // 60_000 * 60_000
    cluster = "local"

    def store(rows: list[tuple[int, str, str, int, int]]) -> None:
        with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn, conn:
            conn.executemany(
                "INSERT INTO console_livefigure (cluster, minute_ms, metric, key, count, users)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cluster, minute_ms, metric, key)"
                " DO UPDATE SET count = excluded.count, users = excluded.users",
                [(cluster, *r) for r in rows],
            )

    def clear() -> None:
        with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn, conn:
            conn.execute("DELETE FROM console_livefigure WHERE cluster = ?", (cluster,))

    clear()
    try:
        page.goto(f"{console_url}/clusters/local/analytics/live/")
        assert page.locator("#live-chart-card").is_hidden()
        page.evaluate("() => { window.notReloaded = true; }")
        store([(minute - 60_000, "pv", "*", 41, 17), (minute, "pv", "*", 12, 9), (minute, "keyword", "kafka", 3, 2)])
        page.wait_for_function(
            "() => window.Chart && Chart.getChart(document.getElementById('live-chart'))", timeout=20_000
        )
        assert page.locator("#live-chart-card").is_visible()
        assert page.evaluate("() => window.notReloaded === true")  # drawn from the push, not a reload

        def drawn() -> list[int]:
            return list(
                page.evaluate(
                    "() => Chart.getChart(document.getElementById('live-chart')).data.datasets[0].data"
                    ".filter(p => p.y !== null).map(p => p.y)"
                )
            )

        assert drawn()[-2:] == [41, 12]
        page.screenshot(path=str(artifacts / "analytics-live-first-push.png"))
        store([(minute, "pv", "*", 30, 20)])  # a later batch: the same chart follows
        page.wait_for_function(
            "() => Chart.getChart(document.getElementById('live-chart')).data.datasets[0].data.some(p => p.y === 30)",
            timeout=20_000,
        )
        assert drawn()[-2:] == [41, 30]
        assert page.errors == []
    finally:
        clear()
