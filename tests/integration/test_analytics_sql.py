# ruff: noqa: S608 - the queries are the subject under test, over topics the test names itself
"""SQL over topics on the session's Spark Connect server, over records this test writes: every figure compared
with a count in plain Python over what was written; the API refuses what does not only read; a long query is
cancelled, or stopped at its time limit; rows beyond the limit are dropped, saying so."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaProducer

from analytics.formats import page_values
from analytics.runner import JobCancelled, JobFailed
from analytics.source import kafka_options
from analytics.sql import check_sql, infer_schema, run_sql, sample_schemas
from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.messages.ranges import get_ranges
from console.background import job_process, jobs
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000
BASE = (int(time.time() * 1000) // HOUR - 3) * HOUR
KINDS = ("buy", "view", "refund")


def config() -> ClusterConfig:
    return ClusterConfig(name="test", bootstrap_servers=split_servers(BOOTSTRAP), timeout=10)


@pytest.fixture(scope="module")
def conn(kafka_cluster: Any) -> Any:
    connection = ClusterConnection(config())
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def orders(kafka_cluster: Any) -> tuple[str, list[dict[str, Any]]]:
    """3 partitions of 1,200 JSON orders over three hours (some without an amount, some with a header), keyed by
    user, plus two records that are not JSON; returns the topic and what was written, with partition and offset."""
    topic = create_topic(unique("sql-orders"), partitions=3)
    rng = random.Random(5)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", linger_ms=10)
    written: list[dict[str, Any]] = []
    futures = []
    for i in range(1200):
        doc: dict[str, Any] = {"id": i, "kind": rng.choice(KINDS), "user": f"u{rng.randrange(50)}"}
        if i % 7:
            doc["amount"] = rng.randrange(1, 500)
        headers = [("source", b"shop")] if i % 3 == 0 else []
        ts = BASE + i * 9_000
        row = {**doc, "ts": ts, "headers": headers, "value": json.dumps(doc).encode()}
        futures.append(
            (
                row,
                producer.send(
                    topic,
                    key=doc["user"].encode(),
                    value=row["value"],
                    headers=headers,
                    timestamp_ms=ts,
                    partition=i % 3,
                ),
            )
        )
    for j, raw in enumerate((b"not json", b"[1, 2]")):
        row = {"value": raw, "ts": BASE + j, "headers": []}
        futures.append((row, producer.send(topic, value=raw, timestamp_ms=BASE + j, partition=0)))
    producer.flush(timeout=60)
    for row, future in futures:
        meta = future.get(timeout=30)
        row["partition"], row["offset"] = meta.partition, meta.offset
        written.append(row)
    producer.close(timeout=10)
    return topic, written


def run(spark: Any, conn: Any, text: str, max_rows: int = 10_000, timeout_s: float = 300, **kw: Any) -> Any:
    query = check_sql(text)
    ranges = get_ranges(conn, list(query.topics), kw.get("from_ms"), kw.get("to_ms"))
    schemas = sample_schemas(ranges, page_values(conn))
    return run_sql(
        spark, query, kafka_options(config(), Path("/tmp")), ranges, schemas, unique("sql"), max_rows, timeout_s, **kw
    )


def test_a_grouped_query_over_the_inferred_fields_counts_what_was_written(spark: Any, conn: Any, orders: Any) -> None:
    topic, written = orders
    result = run(
        spark,
        conn,
        f"SELECT fields.kind AS kind, count(*) AS n, sum(fields.amount) AS total, count(fields.amount) AS priced "
        f"FROM `{topic}` WHERE fields.kind IS NOT NULL GROUP BY fields.kind ORDER BY kind",
    )
    docs = [w for w in written if "kind" in w]
    expected = [
        {
            "kind": kind,
            "n": sum(1 for d in docs if d["kind"] == kind),
            "total": sum(d.get("amount", 0) for d in docs if d["kind"] == kind),
            "priced": sum(1 for d in docs if d["kind"] == kind and "amount" in d),
        }
        for kind in sorted(KINDS)
    ]
    assert result.rows == expected
    assert result.summary["columns"] == [
        {"name": "kind", "type": "string"},
        {"name": "n", "type": "bigint"},
        {"name": "total", "type": "bigint"},
        {"name": "priced", "type": "bigint"},
    ]
    assert result.summary["truncated"] is False
    assert result.input_rows == len(written)


def test_partitions_offsets_keys_headers_and_times_are_columns(spark: Any, conn: Any, orders: Any) -> None:
    topic, written = orders
    per_partition = run(
        spark,
        conn,
        f"SELECT partition, count(*) AS n, min(offset) AS first, max(offset) AS last FROM `{topic}` "
        "GROUP BY partition ORDER BY partition",
    ).rows
    expected = []
    for p in range(3):
        offsets = [w["offset"] for w in written if w["partition"] == p]
        expected.append({"partition": p, "n": len(offsets), "first": min(offsets), "last": max(offsets)})
    assert per_partition == expected
    tagged = run(
        spark,
        conn,
        f"SELECT count(*) AS n FROM `{topic}` WHERE exists(headers, h -> h.key = 'source' AND h.value = 'shop')",
    ).rows
    assert tagged == [{"n": sum(1 for w in written if w["headers"])}]
    keys = run(spark, conn, f"SELECT key, count(*) AS n FROM `{topic}` WHERE key IS NOT NULL GROUP BY key").rows
    assert {r["key"]: r["n"] for r in keys} == Counter(w["user"] for w in written if "user" in w)
    first = run(
        spark, conn, f"SELECT min(timestamp) AS t, max(value) AS v FROM `{topic}` WHERE offset = 0 AND partition = 0"
    )
    assert first.rows[0]["t"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(BASE / 1000))


def test_a_time_range_bounds_what_is_read(spark: Any, conn: Any, orders: Any) -> None:
    topic, written = orders
    start, end = BASE + HOUR, BASE + 2 * HOUR
    rows = run(spark, conn, f"SELECT count(*) AS n FROM `{topic}`", from_ms=start, to_ms=end).rows
    assert rows == [{"n": sum(1 for w in written if start <= w["ts"] < end)}]


def test_a_join_of_two_topics_and_a_row_limit(spark: Any, conn: Any, orders: Any) -> None:
    topic, written = orders
    users = create_topic(unique("sql-users"), partitions=1)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    for n in range(0, 50, 2):
        producer.send(users, key=f"u{n}".encode(), value=json.dumps({"user": f"u{n}", "tier": "gold"}).encode())
    producer.flush(timeout=30)
    producer.close()
    joined = run(
        spark,
        conn,
        f"SELECT count(*) AS n FROM `{topic}` o JOIN `{users}` u ON o.fields.user = u.fields.user",
    ).rows
    gold = {f"u{n}" for n in range(0, 50, 2)}
    assert joined == [{"n": sum(1 for w in written if w.get("user") in gold)}]
    limited = run(spark, conn, f"SELECT offset FROM `{topic}` ORDER BY offset", max_rows=10)
    assert len(limited.rows) == 10
    assert limited.summary["truncated"] is True
    assert any("first 10 rows" in n for n in limited.notes)


def test_cancel_interrupts_the_query_and_a_time_limit_stops_it(spark: Any, conn: Any, orders: Any) -> None:
    topic, _ = orders
    slow = f"SELECT count(*) AS n FROM `{topic}` a CROSS JOIN `{topic}` b CROSS JOIN range(2000) r"
    cancelled = threading.Event()
    threading.Timer(3, cancelled.set).start()
    with pytest.raises(JobCancelled, match="were stopped"):
        run(spark, conn, slow, cancelled=cancelled)
    with pytest.raises(JobFailed, match="ran past its limit of 2 s"):
        run(spark, conn, slow, timeout_s=2)
    # The server runs the next query as before.
    assert run(spark, conn, "SELECT count(*) AS n FROM range(5)").rows == [{"n": 5}]


def test_the_sample_gives_the_fields_their_types(conn: Any, orders: Any) -> None:
    topic, written = orders
    ranges = get_ranges(conn, [topic], None, None)
    schema = sample_schemas(ranges, page_values(conn))[topic]
    assert schema == infer_schema(w["value"] for w in written)
    assert schema == "`id` BIGINT, `kind` STRING, `user` STRING, `amount` BIGINT"


@pytest.mark.django_db
def test_the_api_runs_a_query_and_refuses_what_does_not_only_read(
    spark: Any, orders: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic, written = orders
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)
    client: Client = logged_in("operator")

    def post(body: dict[str, Any]) -> Any:
        return client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json")

    for bad, says in (
        ("DROP TABLE `x`", "not DROP"),
        ("SELECT * FROM parquet.`/etc/passwd`", "not a topic"),
        ("SELECT reflect('java.lang.Runtime', 'getRuntime')", "reaches outside"),
        ("", "Write a query"),
    ):
        answer = post({"report": "sql", "sql": bad})
        assert answer.status_code == 400, answer.content
        assert says in answer.json()["message"]
    missing = post({"report": "sql", "sql": "SELECT * FROM `no-such-topic-here`"})
    assert missing.status_code == 404
    answer = post({"report": "sql", "sql": f"SELECT fields.kind AS kind, count(*) AS n FROM `{topic}` GROUP BY 1"})
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["id"]
    assert answer.json()["sql"].startswith("SELECT")
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    rows = client.get(f"/api/jobs/{job_id}/result/").json()["rows"]
    expected = Counter(w.get("kind") for w in written)
    assert {r["kind"]: r["n"] for r in rows} == expected
    csv_text = client.get(f"/clusters/local/analytics/jobs/{job_id}/result.csv").content.decode()
    assert csv_text.splitlines()[0] == "kind,n"
    assert client.get(f"/clusters/local/analytics/jobs/{job_id}/").status_code == 200
    viewer = logged_in("viewer")
    refused = viewer.post(
        "/api/clusters/local/jobs/",
        json.dumps({"report": "sql", "sql": f"SELECT 1 FROM `{topic}`"}),
        content_type="application/json",
    )
    assert refused.status_code == 403
