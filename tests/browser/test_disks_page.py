"""A user goes from the overview to a broker's disks, down to a partition's segments, a segment's batches,
one batch's records and its index, in real Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.kafka_helpers import create_topic, produce, small_segments, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_from_the_overview_to_a_batch_on_disk(console_url: str, page: Any, artifacts: Path) -> None:
    name = create_topic(
        unique("diskpage"), assignments={0: [0]}, configs={**small_segments(4096), "index.interval.bytes": "200"}
    )
    for start in range(0, 200, 20):
        produce(name, [(f"user-{i}".encode(), json.dumps({"n": i}).encode()) for i in range(start, start + 20)], 0)

    page.goto(f"{console_url}/clusters/local/")
    page.click("#disks-link")
    page.wait_for_url("**/disks/")
    assert page.locator(".broker-disks").count() == 3
    page.screenshot(path=str(artifacts / "disks.png"), full_page=True)
    # A busy cluster has a hundred larger partitions: the topic filter finds this one's.
    page.fill("#disks-q", name)
    page.press("#disks-q", "Enter")
    page.wait_for_url(f"**/disks/?q={name}*")
    assert page.locator("#largest tbody tr").count() == 1
    assert name in page.locator("#largest").inner_text()

    page.goto(f"{console_url}/clusters/local/brokers/0/partitions/{name}/0/segments/")
    rows = page.locator("#segments tbody tr")
    assert rows.count() >= 2
    assert "active" in rows.last.inner_text()
    page.click("#check-start")
    page.locator("#check-state", has_text="every segment reads clean").wait_for(timeout=20_000)
    assert "200 records" in page.locator("#check-progress").inner_text()
    page.screenshot(path=str(artifacts / "segments.png"), full_page=True)
    rows.first.locator("a").first.click()
    page.wait_for_url("**/segments/0/")
    assert page.locator("#batches tbody tr").count() >= 2
    assert page.locator("#findings").count() == 0
    page.screenshot(path=str(artifacts / "segment.png"), full_page=True)
    page.locator("#batches tbody tr").nth(1).locator("a").first.click()
    page.wait_for_url("**/batches/*/")
    # The second batch holds the second call's 20 records (a producer's batch each), unless a roll split them.
    first = int(page.locator("#records tbody tr").first.locator("td").first.inner_text())
    assert f"user-{first}" in page.locator("#records").inner_text()
    assert page.locator("#records tbody tr").count() >= 1
    page.screenshot(path=str(artifacts / "batch.png"), full_page=True)
    page.goto(f"{console_url}/clusters/local/brokers/0/partitions/{name}/0/segments/0/index/")
    assert "all match" in page.locator("#index-summary").inner_text()
    page.screenshot(path=str(artifacts / "index.png"), full_page=True)
    assert page.errors == []
