"""A topic profile in real Chromium against a real console whose job runs in a process of its own on the session's
warm Spark: "Profile" on a topic's page, the job's page drawing the profile, its bars (per partition, the hot one
red; per hour) and its marked drifting field."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from playwright.sync_api import Error as PlaywrightError

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.browser, pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000


@pytest.fixture(scope="module")
def orders(kafka_cluster: Any) -> str:
    """3 hours of 1,500 orders in the last day: partition 0 hot, a coupon field from half way on."""
    topic = create_topic(unique("browser-profile"), partitions=3)
    start = (int(time.time() * 1000) // HOUR - 3) * HOUR
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", linger_ms=20)
    for i in range(1500):
        doc: dict[str, Any] = {"id": i, "user": f"u{i % 300}", "amount": None if i % 9 == 0 else i % 170 + 0.5}
        if i >= 750:
            doc["coupon"] = f"C{i % 40}"
        partition = 0 if i % 10 < 7 else 1 + i % 2
        key = b"big-customer" if i % 5 == 0 else f"u{i % 300}".encode()
        producer.send(
            topic, key=key, value=json.dumps(doc).encode(), partition=partition, timestamp_ms=start + i * 7_000
        )
    producer.flush(timeout=60)
    producer.close(timeout=10)
    return topic


@pytest.mark.timeout(400)
def drawn_yet(page: Any, selector: str) -> bool:
    """Whether ``selector`` is on the page now; False while the page reloads itself (it does when it sees the job
    end: asking in the middle of that reload fails, "Execution context was destroyed", as a CI run met)."""
    try:
        return page.query_selector(selector) is not None
    except PlaywrightError as exc:
        if "context was destroyed" not in str(exc) and "navigat" not in str(exc):
            raise
        return False


def test_profile_from_the_topic_page_draws_its_sections(
    page: Any, console_url: str, orders: str, artifacts: Path, spark_server: str
) -> None:
    page.goto(f"{console_url}/clusters/local/topics/{orders}/")
    page.click("#profile-topic")
    page.wait_for_url(re.compile(r"/analytics/jobs/\d+/$"))
    job_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not drawn_yet(page, "#profile-fields"):
        status = page.request.get(f"{console_url}/api/jobs/{job_id}/").json()
        assert status["status"] not in ("failed", "cancelled"), status["error"]
        time.sleep(1)  # the page reloads itself when the job ends
    page.wait_for_selector("#profile-fields", timeout=30_000)
    page.wait_for_load_state("load")
    drawn = page.evaluate(
        """() => ["partition-chart", "hour-chart"].map(id => {
            const chart = Chart.getChart(document.getElementById(id));
            return chart ? chart.data.datasets[0].data : null; })"""
    )
    per_partition = Counter(0 if i % 10 < 7 else 1 + i % 2 for i in range(1500))
    assert drawn[0] == [per_partition[p] for p in range(3)]  # records per partition, as written
    per_hour = Counter(i * 7_000 // HOUR for i in range(1500))
    assert drawn[1] == [per_hour[h] for h in range(3)]
    colours = page.evaluate(
        "() => Chart.getChart(document.getElementById('partition-chart')).data.datasets[0].backgroundColor"
    )
    assert colours[0] != colours[1]  # the hot partition is red
    assert page.inner_text("#profile-partitions").count("hot") >= 2  # the rule's words and the one mark
    assert "appeared" in page.inner_text("[data-field=coupon]")
    assert "big-customer" in page.inner_text("#profile-keys")
    page.screenshot(path=str(artifacts / "analytics-profile.png"), full_page=True)
    assert page.errors == []
