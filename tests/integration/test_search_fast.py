"""The fast search against the real cluster: a search that passes over record batches (its probe) finds exactly what
reading every record finds. The oracle is independent: kcat reads the whole topic (-J), and each record it gives is
tested with the same filter. The records are written by kcat in many small lz4 batches, with the needle in values,
keys and headers, hidden behind JSON escapes, and in a transaction that was aborted."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaProducer

from broker.local import launcher
from broker.messages.query import parse_query
from broker.messages.query_terms import MessageView
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

KCAT = shutil.which("kcat") or "kcat"
SMALL_BATCHES = ("-X", "linger.ms=1", "-X", "batch.num.messages=40")
QUERIES = [
    'value contains "needle"',
    'value.note == "needle"',
    'key == "needle-key" or headers.h == "needle"',
    'value contains "needle" and value.n > 3',
    'value.user == "u7"',
    'value.page == "/p/1" and value.user == "u7"',
]


def _lines() -> bytes:
    rows = []
    for n in range(3000):
        value: str = json.dumps({"user": f"u{n % 50}", "n": n % 10, "page": "/p/1"})
        if n % 701 == 0:
            value = json.dumps({"user": "u1", "n": n % 10, "note": "needle"})
        if n % 997 == 0:
            value = '{"user": "u2", "n": 5, "note": "ne\\u0065dle"}'  # the needle only once decoded
        if n == 1234:
            value = '{"user": "u7", "n": 1, "page": "\\/p\\/1"}'  # JSON may escape "/"
        if n == 1500:
            value = "plain text with a needle"
        rows.append(f"{'needle-key' if n == 2000 else f'k{n}'}\t{value}")
    return ("\n".join(rows) + "\n").encode()


@pytest.fixture(scope="module")
def needle_topic(kafka_cluster: launcher.ClusterLayout) -> str:
    name = create_topic(unique("fast-search"), partitions=2)
    subprocess.run(
        [KCAT, "-P", "-b", BOOTSTRAP, "-t", name, "-z", "lz4", "-K", "\t", *SMALL_BATCHES],
        input=_lines(),
        check=True,
        timeout=120,
    )
    subprocess.run(
        [KCAT, "-P", "-b", BOOTSTRAP, "-t", name, "-p", "0", "-H", "h=needle", "-K", "\t"],
        input=b'hk\t{"user": "u3"}\n',
        check=True,
        timeout=60,
    )
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=f"{name}-tx")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(name, key=b"tx", value=b'{"note": "needle", "user": "u7"}', partition=1)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    return name


def kcat_records(topic: str, isolation: str) -> list[dict[str, Any]]:
    reader = [KCAT, "-C", "-b", BOOTSTRAP, "-t", topic, "-o", "beginning", "-e", "-q", "-J"]
    out = subprocess.run(
        [*reader, "-X", f"isolation.level={isolation}"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _view(record: dict[str, Any]) -> MessageView:
    """What the filter sees of a record kcat read: key and value under "auto" (JSON, else text)."""

    def auto(text: str | None) -> tuple[object, str | None]:
        if text is None:
            return None, None
        try:
            return json.loads(text), text
        except ValueError:
            return text, None

    key, key_text = auto(record.get("key"))
    value, value_text = auto(record.get("payload"))
    pairs = record.get("headers") or []
    headers = {pairs[i]: pairs[i + 1] for i in range(0, len(pairs), 2)}
    return MessageView(
        topic=record["topic"],
        partition=record["partition"],
        offset=record["offset"],
        timestamp=record.get("ts"),
        key=key,
        value=value,
        headers=headers,
        size=len(record.get("key") or "") + len(record.get("payload") or ""),
        key_text=key_text,
        value_text=value_text,
    )


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_a_probed_search_finds_what_reading_every_record_finds(needle_topic: str, isolation: str) -> None:
    client: Client = logged_in("viewer", f"fast-search-{isolation}")
    records = kcat_records(needle_topic, isolation)
    assert len(records) == 3001 + (1 if isolation == "read_uncommitted" else 0)
    for query in QUERIES:
        parsed = parse_query(query)
        expected = sorted((r["partition"], r["offset"]) for r in records if parsed.matches(_view(r)))
        response = client.get(
            f"/api/clusters/local/topics/{needle_topic}/search/",
            {"q": query, "isolation": isolation, "max_scan": 100_000, "max_matches": 10_000},
        )
        assert response.status_code == 200, response.content
        body = response.json()
        found = sorted((m["partition"], m["offset"]) for m in body["messages"])
        assert found == expected, query
        assert body["stopped"] is None
    # The escaped needles, the header and the aborted record were all in play.
    assert any("\\u0065" in (r.get("payload") or "") for r in records)


def test_a_search_stopped_at_max_scan_counts_the_batches_it_passed_over(needle_topic: str) -> None:
    client: Client = logged_in("viewer", "fast-search-limit")
    response = client.get(
        f"/api/clusters/local/topics/{needle_topic}/search/",
        {"q": 'value contains "nothing-holds-this"', "max_scan": 1234, "partitions": "0"},
    )
    body = response.json()
    assert body["scanned"] == 1234
    assert body["stopped"] == "limit"
    assert body["matched"] == 0
