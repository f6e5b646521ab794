"""Analytics in real Chromium against a real console, whose jobs run in processes of their own with
real Spark: a PV/UU job started from the form, its progress bar moving and its chart drawn; a job
cancelled from its page, its process gone."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError

from broker.demo.web import backfill
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.browser, pytest.mark.kafka]

HOUR = 3_600_000


@pytest.fixture(scope="module")
def busy_topic(kafka_cluster: Any) -> str:
    topic = create_topic(unique("browser-web"), partitions=3)
    backfill(BOOTSTRAP.split(","), topic, 400_000, span_ms=6 * HOUR, seed=21)
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


def test_a_pv_uu_job_shows_its_progress_and_draws_its_chart(
    page: Any, console_url: str, busy_topic: str, artifacts: Path
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


def test_cancel_stops_a_running_job_and_its_process(page: Any, console_url: str, busy_topic: str) -> None:
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
