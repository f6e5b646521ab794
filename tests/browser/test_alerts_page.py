"""Alerts in real Chromium: from a group's page, "alert me when it falls behind" opens the alerts page with the
group filled in; the rule made there fires on the console's own sampler (every second here) and shows under
"Firing now" and in the header of every page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_a_rule_made_from_the_group_page_fires(console_url: str, page: Any, artifacts: Path) -> None:
    topic = create_topic(unique("alert-page"), partitions=1)
    produce(topic, [(None, b"m%d" % i) for i in range(20)], partition=0)
    group = unique("g-alert-page")
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(4, "", -1)})
    consumer.close()

    page.goto(f"{console_url}/clusters/local/groups/{group}/")
    assert page.locator("#forecast").is_visible()
    page.screenshot(path=str(artifacts / "group-forecast.png"), full_page=True)
    page.click("#alert-me")
    page.wait_for_url("**/clusters/local/alerts/**")
    assert page.locator("#new-rule").get_attribute("open") is not None
    assert page.input_value("#rule-subject") == group
    assert page.input_value("#rule-kind") == "consumer_lag"
    page.fill("#rule-threshold", "10")
    page.click("#new-rule button[type=submit]")
    page.wait_for_selector(f'#rules-table tr:has-text("Lag of {group}")')
    row = page.locator(f'#firing-table tr[data-subject="{group}"]')
    row.wait_for(timeout=45_000)  # the sampler's next rounds (every second here), then the part's refresh
    page.locator(f'#rules-table tr:has-text("Lag of {group}") >> text=1 firing').wait_for(timeout=10_000)
    page.locator(f'#history-table tr:has-text("{group}") >> text=firing').first.wait_for(timeout=10_000)
    assert "16 records behind" in row.inner_text()
    page.screenshot(path=str(artifacts / "alerts-page.png"), full_page=True)

    page.goto(f"{console_url}/clusters/local/topics/")
    badge = page.locator("#firing-badge")
    badge.wait_for(timeout=10_000)
    assert "firing" in badge.inner_text()
    badge.click()
    page.wait_for_url("**/clusters/local/alerts/")
    assert not page.errors, page.errors
