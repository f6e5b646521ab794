"""The Move data tab in real Chromium: a dry run shows the first records and where each would go, a copy runs to
its end on a task page that follows it by itself, and the records are then in the target topic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def held(topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","))
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        return sum(consumer.end_offsets(tps).values())
    finally:
        consumer.close()


def test_a_dry_run_then_a_copy_from_the_move_data_tab(console_url: str, page: Any, artifacts: Path) -> None:
    source = create_topic(unique("move-src"), partitions=2)
    target = create_topic(unique("move-dst"), partitions=2)
    for p in range(2):
        produce(source, [(b"k%d" % i, b'{"n": %d}' % i) for i in range(40)], partition=p)

    page.goto(f"{console_url}/clusters/local/topics/{source}/move/")
    assert page.locator('nav.tabs a[aria-current="page"]').inner_text() == "Move data"
    page.screenshot(path=str(artifacts / "move-page.png"), full_page=True)
    page.fill("#copy-to-topic", target)
    page.click("#copy-dry-run")
    page.wait_for_url("**/tasks/**")
    page.wait_for_selector("#task-status:text('succeeded')")  # the page follows the run by itself
    assert page.locator("#task-samples tbody tr").count() == 10
    assert "80 records would be copied of 80 read" in page.locator("#task-progress").inner_text()
    page.screenshot(path=str(artifacts / "move-dry-run.png"), full_page=True)
    assert held(target) == 0

    page.goto(f"{console_url}/clusters/local/topics/{source}/move/")
    page.fill("#copy-to-topic", target)
    page.click("#copy-button")
    page.wait_for_url("**/tasks/**")
    page.wait_for_selector("#task-status:text('succeeded')")
    assert "exactly-once" in page.locator("#task-progress").inner_text()
    page.screenshot(path=str(artifacts / "move-copied.png"), full_page=True)
    assert held(target) >= 80  # 80 records (and the transactions' commit markers)
    page.goto(f"{console_url}/clusters/local/topics/{source}/move/")
    assert page.locator("#recent-tasks tbody tr").count() == 2
