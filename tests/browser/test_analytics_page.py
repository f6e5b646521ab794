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


def start_job(page: Any, console_url: str, topic: str, bucket: str = "minute") -> int:
    page.goto(f"{console_url}/clusters/local/analytics/")
    page.select_option("#report", "pv_uu")
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
    assert page.errors == []
    assert not job_processes(job_id)


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
    page.goto(f"{console_url}/clusters/local/analytics/jobs/{job_id}/")
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
