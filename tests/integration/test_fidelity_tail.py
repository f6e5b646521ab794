"""The live tail labels transactional records as the pages do (issue 27): through the real websocket, with a real
transactional kafka-python producer that commits, aborts, and leaves a transaction open; the labels compared
with the messages API's for the same offsets."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from kafka import KafkaProducer

from broker.local import launcher
from console.asgi import application
from tests.conftest import BOOTSTRAP, logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

ROW = re.compile(r'<tr id="msg-(\d+)-(\d+)"( hx-swap-oob="true")? class="([^"]*)"')


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def transactional_producer() -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("fidelity-tail"))
    producer.init_transactions()
    return producer


def send(producer: KafkaProducer, topic: str, values: list[str], end: str | None) -> None:
    producer.begin_transaction()
    for value in values:
        producer.send(topic, key=b"k", value=value.encode(), partition=0)
    producer.flush()
    if end == "commit":
        producer.commit_transaction()
    elif end == "abort":
        producer.abort_transaction()


class Rows:
    """The tail's table as a browser would hold it: each pushed row by its id, later pushes (a row drawn again
    in place, hx-swap-oob) replacing earlier ones; ``updates`` counts the rows drawn again."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[str, str]] = {}  # offset -> (classes, the row's html)
        self.updates: dict[int, int] = {}

    def take(self, pushed: str) -> None:
        if 'hx-swap-oob="true"' in pushed:
            # Rows drawn again come alone: after another element a <tr> would not parse as a row in a browser.
            assert pushed.lstrip().startswith("<tr "), pushed[:200]
            assert pushed.count("<tr ") == pushed.count('hx-swap-oob="true"')
        for part in pushed.split("<tr ")[1:]:
            found = ROW.match("<tr " + part)
            if found is None:
                continue
            offset = int(found.group(2))
            self.rows[offset] = (found.group(4), part.split("</tr>")[0])
            if found.group(3):
                self.updates[offset] = self.updates.get(offset, 0) + 1

    def label(self, offset: int) -> str:
        """What the row says of the entry: ``marker-commit`` / ``marker-abort``, ``tx-<fate>`` or ``plain``."""
        classes, html = self.rows[offset]
        for name in classes.split():
            if name.startswith("marker-") and name != "marker-row":
                assert f"{name.removeprefix('marker-')} marker</span>" in html
                return name
            if name.startswith("tx-"):
                # The same pill as the pages draw (messages/_transaction.html), with the same word.
                assert 'tx" title="' in html
                assert f">{name.removeprefix('tx-')}</span>" in html
                return name
        return "plain"


def api_label(message: dict[str, Any]) -> str:
    if message["control"]:
        return f"marker-{message['control']}"
    return f"tx-{message['transaction']}" if message["transaction"] else "plain"


def tail(topic: str, query: str, steps: list[tuple[Callable[[], None], Callable[[Rows], bool]]], headers: Any) -> Rows:
    """Open the tail's websocket, then run each step (off the event loop) and read pushes until its check
    holds (30 s at most each)."""

    async def scenario() -> Rows:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{topic}/tail/{query}", headers=headers)
        assert (await ws.connect())[0]
        rows = Rows()
        try:
            status = await ws.receive_from(timeout=15)
            assert "Waiting for new messages" in status, status
            await asyncio.sleep(1.0)  # the reader has found where the partition ends
            for action, done in steps:
                await asyncio.get_running_loop().run_in_executor(None, action)
                deadline = time.monotonic() + 30
                while not done(rows):
                    assert time.monotonic() < deadline, f"the tail did not show it: {sorted(rows.rows)}"
                    # (receive_from's time-out would cancel the consumer: wait for output first.)
                    if not await ws.receive_nothing(timeout=0.5, interval=0.05):
                        rows.take(await ws.receive_from(timeout=5))
        finally:
            await ws.disconnect()
        return rows

    return async_to_sync(scenario)()


def waited(seconds: float) -> Callable[[Rows], bool]:
    """A step's check that holds ``seconds`` after it is first asked: the pushes meanwhile are read."""
    since: list[float] = []

    def done(_: Rows) -> bool:
        since.append(time.monotonic())
        return since[-1] - since[0] >= seconds

    return done


def test_the_tail_labels_committed_aborted_and_open_records_as_the_pages_do(client: Client) -> None:
    name = create_topic(unique("fid-tail"), partitions=1)
    producer, left_open = transactional_producer(), transactional_producer()
    try:

        def history() -> None:
            # 0-1 committed, 2 marker, 3 aborted, 4 marker, 5 plain, 6 open (its producer writes no marker).
            send(producer, name, ["c0", "c1"], "commit")
            send(producer, name, ["a0"], "abort")
            produce(name, [(b"k", b"plain")], partition=0)
            send(left_open, name, ["o0"], None)

        def later_abort() -> None:
            # 7: a transaction the tail shows open first, then aborted (its marker at 8).
            send(producer, name, ["late"], None)

        def abort_it() -> None:
            producer.abort_transaction()

        rows = tail(
            name,
            "",
            [
                (history, lambda r: set(range(7)) <= set(r.rows)),
                (later_abort, lambda r: 7 in r.rows),
                (abort_it, lambda r: 8 in r.rows and r.label(7) == "tx-aborted"),
            ],
            websocket_headers(client),
        )
        page = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages", {"limit": 50}).json()
    finally:
        producer.close(timeout=5)
        left_open.close(timeout=5)
    expected = {m["offset"]: api_label(m) for m in page["messages"]}
    assert expected == {
        0: "tx-committed",
        1: "tx-committed",
        2: "marker-commit",
        3: "tx-aborted",
        4: "marker-abort",
        5: "plain",
        6: "tx-open",
        7: "tx-aborted",
        8: "marker-abort",
    }
    assert {offset: rows.label(offset) for offset in rows.rows} == expected
    # Offset 7 was pushed as open, then drawn again in place once its abort marker came.
    assert rows.updates.get(7) == 1


def test_a_read_committed_tail_shows_only_committed_records_labelled(client: Client) -> None:
    name = create_topic(unique("fid-tail-rc"), partitions=1)
    producer, left_open = transactional_producer(), transactional_producer()
    try:

        def history() -> None:
            send(producer, name, ["c0", "c1"], "commit")  # 0-1, marker 2
            send(producer, name, ["a0"], "abort")  # 3, marker 4
            produce(name, [(b"k", b"plain")], partition=0)  # 5
            send(left_open, name, ["o0"], None)  # 6: the LSO stays here
            produce(name, [(b"k", b"behind")], partition=0)  # 7, above the LSO
            send(producer, name, ["c2"], "commit")  # 8, marker 9, above the LSO

        rows = tail(
            name,
            "?isolation=read_committed",
            # Then 2 s more of pushes: nothing above the LSO may come while the transaction stays open.
            [(history, lambda r: 5 in r.rows), (lambda: None, waited(2.0))],
            websocket_headers(client),
        )
        committed = client.get(
            f"/api/clusters/local/topics/{name}/partitions/0/messages", {"limit": 50, "isolation": "read_committed"}
        ).json()
    finally:
        producer.close(timeout=5)
        left_open.close(timeout=5)
    assert [m["offset"] for m in committed["messages"]] == [0, 1, 5]
    assert {offset: rows.label(offset) for offset in rows.rows} == {
        m["offset"]: api_label(m) for m in committed["messages"]
    }
    assert rows.label(0) == "tx-committed"
    assert rows.label(5) == "plain"
