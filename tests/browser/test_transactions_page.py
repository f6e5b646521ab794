"""A user reads a partition written by a transactional producer, in real Chromium: labels, markers, the
read_committed view, a marker's own page, and the lag of a read_committed group."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_transactions_on_the_partition_page(console_url: str, page: Any, artifacts: Path) -> None:
    name = create_topic(unique("txpage"), partitions=1)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("tx-browser"))
    producer.init_transactions()
    for values, end in ((["order-1", "order-2"], "commit"), (["order-3"], "abort"), (["order-4"], None)):
        producer.begin_transaction()
        for value in values:
            producer.send(name, key=b"shop", value=f'{{"order": "{value}"}}'.encode(), partition=0)
        producer.flush()
        if end == "commit":
            producer.commit_transaction()
        elif end == "abort":
            producer.abort_transaction()
    produce(name, [(None, b"plain")], partition=0)
    # 0-1 committed, 2 commit marker, 3 aborted, 4 abort marker, 5 open, 6 plain (above the LSO, 5).
    try:
        # The browser tests before this one stop and restart brokers: the console may still be finding the
        # new partition's leader; its page says so and answers once it has (at most a few time-outs).
        deadline = time.monotonic() + 30
        while page.goto(f"{console_url}/clusters/local/topics/{name}/partitions/0/").status == 503:
            assert time.monotonic() < deadline, page.locator("main").inner_text()
            time.sleep(1)
        page.errors.clear()  # the 503s waited out above are the browser's console errors, not the page's
        rows = page.locator("#messages tbody tr")
        assert rows.count() == 7
        assert page.locator("#messages tr.marker-row").count() == 2
        assert page.locator("#msg-0-3 .tx").inner_text() == "aborted"
        assert page.locator("#msg-0-5 .tx").inner_text() == "open"
        assert page.locator("#msg-0-0 .tx").inner_text() == "committed"
        assert "abort marker" in page.locator("#msg-0-4").inner_text()
        assert "Last stable offset 5" in page.locator("#stable-offset").inner_text()
        holder = page.locator("#stable-offset-producers").get_attribute("href") or ""
        assert holder.endswith(f"/topics/{name}/partitions/0/producers/")  # which producer holds the LSO back
        page.screenshot(path=str(artifacts / "transactions-all.png"), full_page=True)

        # What a read_committed consumer sees: the committed records only, nothing from the LSO on.
        page.select_option("#isolation", "read_committed")
        page.click("form.toolbar button[type=submit]")
        page.wait_for_url("**isolation=read_committed**")
        offsets = page.locator("#messages tbody tr").evaluate_all("rows => rows.map(r => r.id)")
        assert offsets == ["msg-0-0", "msg-0-1"]
        page.screenshot(path=str(artifacts / "transactions-read-committed.png"), full_page=True)

        # A marker opens on its own page, with its neighbours.
        page.goto(f"{console_url}/clusters/local/topics/{name}/partitions/0/offsets/4/")
        assert "Transaction abort marker" in page.locator("h1").inner_text()
        assert "aborted" in page.locator("#marker").inner_text()
        page.click("a[rel=next]")
        page.wait_for_url("**/offsets/5/")
        assert page.locator("#message-transaction").inner_text().strip().endswith("open")
        page.screenshot(path=str(artifacts / "transactions-marker.png"), full_page=True)
    finally:
        producer.commit_transaction()
        producer.close(timeout=5)

    # A read_committed group that read everything, committed as exactly-once pipelines do.
    group = unique("txpage-group")
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(7, "", -1)})  # after the plain record; a commit marker is at 7
    finally:
        consumer.close(autocommit=False)
    page.goto(f"{console_url}/clusters/local/groups/{group}/")
    page.locator("#group-partitions tbody tr").first.wait_for(timeout=10_000)
    lag_cell = page.locator("#group-partitions tbody tr").first.locator("td").nth(4).inner_text()
    assert lag_cell.split()[0] == "1"
    assert "0 for read_committed" in lag_cell
    page.screenshot(path=str(artifacts / "transactions-group.png"), full_page=True)
    assert page.errors == []
