"""Two console instances sharing PostgreSQL and Redis, as a team deploys it (issue 33; docker-compose.yml draws the
same shape): both started as `make run` serves the console (its own process, lag sampler on), against the real test
cluster, with PostgreSQL and Redis run by the test from Debian's packages (tests/shared_services.py).

What one instance does, the other sees: a login (the session), a topic created (the audit log), the lag sampler's
history (one sampler among them, by its lease), and a record produced through one arriving on the other's live
tail (its websocket, on the Redis channel layer)."""

from __future__ import annotations

import asyncio
import json
import secrets
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from broker.local import launcher
from console.devserver import ServedConsole, console_process
from tests import shared_services
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_hostile_input import Session, anonymous

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("two instances sharing PostgreSQL and Redis do not depend on the cluster's mode: run once"),
]

ADMIN = ("team-admin", "kz-Shared-Deploy-9x!")


@pytest.fixture(scope="module")
def deployment(kafka_cluster: launcher.ClusterLayout) -> Iterator[tuple[ServedConsole, ServedConsole, str]]:
    """Instances A and B of the console over one PostgreSQL and one Redis; yields (A, B, the database's URL)."""
    with shared_services.postgres() as database, shared_services.redis() as channels:
        settings = {
            "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
            "ZOOKEEPER_CONNECT": kafka_cluster.zookeeper_connect,
            "KAZAMI_CLUSTERS_FILE": "",
            "DATABASE_URL": database,
            "REDIS_URL": channels,
            "KAZAMI_SECRET_KEY": secrets.token_urlsafe(50),  # a team's instances share it: sessions are signed with it
            "KAZAMI_LAG_SAMPLER": "1",
            "KAZAMI_LAG_SAMPLE_INTERVAL": "1",
        }
        with (
            tempfile.TemporaryDirectory(prefix="kazami-shared-a-") as var_a,
            tempfile.TemporaryDirectory(prefix="kazami-shared-b-") as var_b,
            console_process(Path(var_a), settings, {ADMIN[0]: ("admin", ADMIN[1])}, start_timeout=90) as first,
            console_process(Path(var_b), settings, start_timeout=90) as second,
        ):
            yield first, second, database


def signed_in(console: ServedConsole) -> Session:
    session = anonymous(console)
    session.log_in(*ADMIN)
    return session


def on(console: ServedConsole, session: Session) -> Session:
    """``session``'s cookies, used on ``console``."""
    parsed = urllib.parse.urlsplit(console.url)
    return Session(parsed.hostname or "127.0.0.1", parsed.port or 80, session.who, dict(session.cookies))


def test_a_session_made_on_one_instance_is_signed_in_on_the_other(deployment: Any) -> None:
    first, second, _ = deployment
    there = on(second, signed_in(first))
    page = there.send("GET", "/clusters/local/topics/")
    assert page.status == 200
    assert ADMIN[0] in page.body.decode()
    assert there.send("GET", "/api/audit/").status == 200  # an admin's, known on B from A's login


def test_a_change_through_one_instance_is_in_the_audit_log_the_other_shows(deployment: Any) -> None:
    first, second, _ = deployment
    here = signed_in(first)
    name = unique("shared-made")
    body = json.dumps({"name": name, "partitions": 2, "replication_factor": 1}).encode()
    created = here.send("POST", "/api/clusters/local/topics/", body, "application/json")
    assert created.status in (200, 201), created.body[:500]
    audit = json.loads(on(second, here).send("GET", "/api/audit/?action=topic.create").body)
    assert any(e["target"] == name and e["user"] == ADMIN[0] and e["outcome"] == "done" for e in audit["entries"]), (
        audit
    )


def test_one_sampler_holds_the_lease_and_the_other_instance_shows_its_lag_history(deployment: Any) -> None:
    first, second, database = deployment
    topic = create_topic(unique("shared-lag"), partitions=1)
    produce(topic, [(b"k", b"v%d" % i) for i in range(20)])
    group = unique("shared-readers")
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(5, "", -1)})
    finally:
        consumer.close()
    owners: set[str] = set()
    there = on(second, signed_in(first))
    deadline = time.monotonic() + 120
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline:
        with psycopg.connect(database) as connection:
            rows = connection.execute("SELECT owner FROM console_lease WHERE name = 'lag-sampler'").fetchall()
            sampled = connection.execute(
                'SELECT count(*) FROM console_lagsample WHERE "group" = %s', (group,)
            ).fetchone()
        owners |= {r[0] for r in rows}
        listing = json.loads(there.send("GET", f"/api/clusters/local/topics/?q={topic}").body)
        shown = next((t for t in listing.get("topics", []) if t["name"] == topic), {})
        if sampled and sampled[0] > 0 and shown.get("consumer_groups"):
            break
        time.sleep(1)
    assert len(owners) == 1, owners  # one holder: the instances did not take turns
    assert shown.get("consumer_groups") == 1, shown
    assert shown.get("lag") == 15, shown  # 20 records, committed at 5: the holder's sample, read by B


def test_a_record_produced_through_one_instance_arrives_on_the_others_live_tail(deployment: Any) -> None:
    first, second, _ = deployment
    topic = create_topic(unique("shared-tail"), partitions=1)
    here = signed_in(first)
    there = on(second, here)
    marker = f"made-on-a-{secrets.token_hex(4)}"
    url = second.url.replace("http://", "ws://") + f"/ws/clusters/local/topics/{topic}/tail/"
    cookie = "; ".join(f"{k}={v}" for k, v in there.cookies.items())

    async def tail() -> list[str]:
        received: list[str] = []
        async with (
            aiohttp.ClientSession(headers={"Cookie": cookie}) as client,
            client.ws_connect(url, origin=second.url, max_msg_size=0) as ws,
        ):
            await ws.receive(timeout=60)  # the tail's state: it reads from the end now
            sent = await asyncio.to_thread(
                here.send,
                "POST",
                f"/api/clusters/local/topics/{topic}/produce/",
                json.dumps({"value": marker}).encode(),
                "application/json",
            )
            assert sent.status in (200, 201), sent.body[:500]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(marker in r for r in received):
                message = await ws.receive(timeout=60)
                assert message.type is aiohttp.WSMsgType.TEXT, message
                received.append(str(message.data))
        return received

    with ThreadPoolExecutor(max_workers=1) as pool:
        received = pool.submit(asyncio.run, tail()).result()
    assert any(marker in r for r in received), received[-3:]
