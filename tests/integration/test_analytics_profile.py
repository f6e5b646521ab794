"""A topic's profile (analytics.profile) on the session's Spark Connect server, over a topic this test writes with
known contents: four partitions (one hot), fields with nulls and missing, a nested object, an array, a field only in
the second half of the range and one only in its first quarter, thousands of distinct values, hot keys, records
without a key, tombstones and values that are not JSON. Every exact figure is compared with plain Python over what
was written, the distinct counts with the HyperLogLog error the profile states; then the API, the page, the topic
page's button, roles and masking through Django's test client."""

from __future__ import annotations

import html
import json
import math
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaProducer

from analytics import profile
from analytics.profile import RSD, run_profile
from analytics.source import kafka_options
from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.messages.masking import parse_rules
from broker.messages.ranges import get_ranges
from console.background import job_process, jobs
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000
HOURS = 4
BASE = (int(time.time() * 1000) // HOUR - HOURS - 1) * HOUR
N = 6000
KINDS = ("view", "buy", "refund", "share", "search")
HOT_KEYS = ("hot-a", "hot-b", "hot-c")


def config() -> ClusterConfig:
    return ClusterConfig(name="test", bootstrap_servers=split_servers(BOOTSTRAP), timeout=10)


@pytest.fixture(scope="module")
def conn(kafka_cluster: Any) -> Any:
    connection = ClusterConnection(config())
    yield connection
    connection.close()


def document(i: int, rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": i, "user": f"u{i % 2500}", "kind": KINDS[i % len(KINDS)]}
    if i % 11 == 0:
        doc["amount"] = None
    elif i % 7:
        doc["amount"] = rng.randrange(100, 100_000) / 100
    doc["meta"] = {"source": "app" if i % 3 else "web", "v": None if i % 13 == 0 else i % 40}
    if i % 4 == 0:
        doc["tags"] = ["a", "b"][: i % 3]
    if i >= N // 2:
        doc["coupon"] = f"C{i % 300:03d}"  # appears half way through
    if i < N // 4:
        doc["legacy"] = True  # gone after the first quarter
    if i % 17 == 0:
        doc["mixed"] = "text"
    elif i % 5 == 0:
        doc["mixed"] = i
    return doc


@pytest.fixture(scope="module")
def written(kafka_cluster: Any) -> tuple[str, list[dict[str, Any]]]:
    """The topic and what was written: each record's partition, key, value bytes, time and document."""
    topic = create_topic(unique("profile"), partitions=4)
    rng = random.Random(29)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", linger_ms=20)
    rows: list[dict[str, Any]] = []
    for i in range(N):
        ts = BASE + i * (HOURS * HOUR // N)
        partition = 0 if i % 8 < 5 else i % 8 - 4  # 5/8 of the records in partition 0: hot
        if i % 50 == 0:
            key = None
        elif i % 4 == 0:
            key = HOT_KEYS[i % 3].encode()
        else:
            key = f"k{rng.randrange(3000)}".encode()
        doc = document(i, rng)
        value = json.dumps(doc).encode()
        rows.append({"partition": partition, "key": key, "value": value, "ts": ts, "doc": doc})
    for j, odd in enumerate((b"not json", b"[1, 2]", b"42", None, None)):
        rows.append({"partition": 1 + j % 3, "key": b"odd", "value": odd, "ts": BASE + j * HOUR, "doc": None})
    for row in rows:
        producer.send(topic, key=row["key"], value=row["value"], partition=row["partition"], timestamp_ms=row["ts"])
    producer.flush(timeout=60)
    producer.close(timeout=10)
    return topic, rows


def paths(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A document's fields as the profile names them: nested objects as a.b (the object a field too)."""
    out: dict[str, Any] = {}
    for name, value in doc.items():
        out[prefix + name] = value
        if isinstance(value, dict):
            out.update(paths(value, prefix + name + "."))
    return out


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def within_hll(estimate: int, true: int) -> bool:
    """Within three of the stated standard errors (RSD): 99.7% of estimates are."""
    return abs(estimate - true) <= max(3 * RSD * true, 1)


def test_the_profile_matches_a_count_in_plain_python(spark: Any, conn: Any, written: Any) -> None:
    topic, rows = written
    ranges = get_ranges(conn, [topic], None, None)
    result = run_profile(spark, topic, kafka_options(config(), Path("/tmp")), ranges, unique("profile"))
    s = result.summary
    docs = [r["doc"] for r in rows if r["doc"] is not None]
    assert s["records"] == len(rows) == result.input_rows
    assert s["objects"] == len(docs) == N
    assert s["null_values"] == 2
    assert s["other_values"] == 3
    sizes = sorted(len(r["key"] or b"") + len(r["value"] or b"") for r in rows)
    assert s["bytes"] == sum(sizes)

    # Per field: types, present, null, missing and the null rate exact; distinct within the stated error.
    flat = [paths(d) for d in docs]
    names = sorted({name for f in flat for name in f})
    assert [r["field"] for r in result.rows] == names
    for row in result.rows:
        name = row["field"]
        values = [f[name] for f in flat if name in f]
        types = Counter(json_type(v) for v in values)
        assert row["types"] == dict(types), name
        assert row["present"] == len(values), name
        assert row["nulls"] == types["null"], name
        assert row["missing"] == N - len(values), name
        assert row["null_rate"] == (types["null"] + N - len(values)) / N, name
        distinct = {text(v) for v in values if v is not None}
        assert within_hll(row["distinct"], len(distinct)), (name, row["distinct"], len(distinct))
        numbers = [v for v in values if json_type(v) in ("integer", "number")]
        strings = [v for v in values if isinstance(v, str)]
        if numbers:
            assert (row["min"], row["max"]) == (min(numbers), max(numbers)), name
        elif strings:
            assert (row["min"], row["max"]) == (min(strings), max(strings)), name
        counts = Counter(text(v) for v in values if v is not None)
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        if name != "amount":  # decimals: Spark writes 12.5 as JSON as Python does, but ties among them are many
            assert [(t["value"], t["count"]) for t in row["top"]] == top, name
        assert sum(t["count"] for t in row["top"]) == sum(c for _, c in top), name
        times = [r["ts"] for r in rows if r["doc"] is not None and name in paths(r["doc"])]
        assert row["first_seen"] == iso_hour(min(times)), name
        assert row["last_seen"] == iso_hour(max(times)), name
    by_name = {r["field"]: r for r in result.rows}
    # The thousands: ids 6,000 and users 2,500 distinct, by HyperLogLog within the stated error.
    assert within_hll(by_name["id"]["distinct"], N)
    assert within_hll(by_name["user"]["distinct"], 2500)
    assert by_name["meta.v"]["nulls"] == len([i for i in range(N) if i % 13 == 0])

    # Schema drift: coupon appeared half way, legacy went after the first quarter; every other field stays.
    assert by_name["coupon"]["drift"] == "appeared"
    assert by_name["legacy"]["drift"] == "disappeared"
    assert {r["field"] for r in result.rows if r["drift"]} == {"coupon", "legacy"}
    assert s["drift"] == ["coupon", "legacy"]

    # Keys: null keys exact, the ten hottest exact with their share, distinct within the stated error.
    keys = Counter(r["key"].decode() for r in rows if r["key"] is not None)
    assert s["keys"]["null"] == sum(1 for r in rows if r["key"] is None)
    hot = sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [(k["key"], k["count"]) for k in s["keys"]["top"]] == hot
    assert [k["key"] for k in s["keys"]["top"][:3]] == sorted(HOT_KEYS, key=lambda k: (-keys[k], k))
    assert s["keys"]["top"][0]["share"] == hot[0][1] / len(rows)
    assert within_hll(s["keys"]["distinct"], len(keys))

    # Partitions: records and bytes exact; partition 0, above twice the mean, is the one hot.
    expected = []
    mean = len(rows) / 4
    for p in range(4):
        mine = [r for r in rows if r["partition"] == p]
        count = len(mine)
        size = sum(len(r["key"] or b"") + len(r["value"] or b"") for r in mine)
        expected.append({"partition": p, "records": count, "bytes": size, "hot": count > 2 * mean})
    assert s["partitions"] == expected
    assert [p["hot"] for p in s["partitions"]] == [True, False, False, False]

    # Sizes: min, max and mean exact; the percentiles within percentile_approx's rank error.
    assert (s["sizes"]["min"], s["sizes"]["max"]) == (sizes[0], sizes[-1])
    assert s["sizes"]["mean"] == sum(sizes) / len(sizes)
    slack = math.ceil(len(sizes) / profile.ACCURACY) + 1
    for q in profile.PERCENTILES:
        rank = math.ceil(q * len(sizes)) - 1
        low, high = sizes[max(0, rank - slack)], sizes[min(len(sizes) - 1, rank + slack)]
        assert low <= s["sizes"][f"p{round(q * 100)}"] <= high, q

    # Records per hour: exact, every hour of the range (the last odd record opens a fifth).
    per_hour = Counter(iso_hour(r["ts"]) for r in rows)
    assert s["hours"] == [
        {"hour": iso_hour(BASE + h * HOUR), "records": per_hour[iso_hour(BASE + h * HOUR)]} for h in range(HOURS + 1)
    ]


def iso_hour(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // HOUR * HOUR / 1000))


def test_a_time_range_bounds_the_profile(spark: Any, conn: Any, written: Any) -> None:
    topic, rows = written
    start, end = BASE + HOUR, BASE + 2 * HOUR
    ranges = get_ranges(conn, [topic], start, end)
    result = run_profile(
        spark, topic, kafka_options(config(), Path("/tmp")), ranges, unique("profile"), from_ms=start, to_ms=end
    )
    inside = [r for r in rows if start <= r["ts"] < end]
    assert result.summary["records"] == len(inside)
    assert [p["records"] for p in result.summary["partitions"]] == [
        sum(1 for r in inside if r["partition"] == p) for p in range(4)
    ]
    assert result.summary["drift"] == []  # within one hour nothing comes or goes
    before = get_ranges(conn, [topic], BASE - 10 * HOUR, BASE - 9 * HOUR)
    empty = run_profile(
        spark,
        topic,
        kafka_options(config(), Path("/tmp")),
        before,
        "x",
        from_ms=BASE - 10 * HOUR,
        to_ms=BASE - 9 * HOUR,
    )
    assert empty.rows == []
    assert empty.summary["records"] == 0
    assert any("nothing to profile" in n for n in empty.notes)


@pytest.mark.django_db
def test_the_api_the_page_the_button_roles_and_masking(
    spark: Any, written: Any, monkeypatch: pytest.MonkeyPatch, settings: Any, clusters_reset: None
) -> None:
    topic, rows = written
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)
    operator, viewer = logged_in("operator"), logged_in("viewer")

    def post(client: Client, body: dict[str, Any]) -> Any:
        return client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json")

    assert post(operator, {"report": "profile", "topics": [topic, topic + "-2"]}).status_code == 400
    assert "exactly one" in post(operator, {"report": "profile", "topics": [topic, "b"]}).json()["message"]
    assert post(operator, {"report": "profile", "topics": []}).status_code == 400
    assert post(operator, {"report": "profile", "topics": ["no-such-topic-here"]}).status_code == 404
    assert post(viewer, {"report": "profile", "topics": [topic]}).status_code == 403
    answer = post(operator, {"report": "profile", "topics": [topic], "from": BASE, "to": BASE + (HOURS + 1) * HOUR})
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["id"]
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    result = viewer.get(f"/api/jobs/{job_id}/result/").json()
    assert result["report"] == "profile"
    assert result["summary"]["records"] == len(rows)
    assert {r["field"] for r in result["rows"]} >= {"id", "user", "meta.v", "coupon"}
    page = viewer.get(f"/clusters/local/analytics/jobs/{job_id}/")
    assert page.status_code == 200
    body = page.content.decode()
    for part in ("profile-fields", "profile-keys", "profile-partitions", "profile-hours", "profile-drift", "hot-a"):
        assert part in body, part
    assert "Topic profile" in body
    assert "js/profile.js" in body
    assert body.count('class="pill pill-bad">hot<') == 1
    assert 'data-field="coupon" class="drift-row"' in body
    assert "Profile again" not in body  # a viewer cannot start one
    csv_text = viewer.get(f"/clusters/local/analytics/jobs/{job_id}/result.csv").content.decode()
    assert csv_text.splitlines()[0] == ",".join(profile.COLUMNS)

    # The topic page's button: operators see it and it starts a profile of the last 24 hours.
    assert 'id="profile-topic"' in operator.get(f"/clusters/local/topics/{topic}/").content.decode()
    assert 'id="profile-topic"' not in viewer.get(f"/clusters/local/topics/{topic}/").content.decode()
    clicked = operator.post(f"/clusters/local/topics/{topic}/analytics/profile/")
    assert clicked.status_code == 302
    started = jobs.get_job(int(clicked["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert started.report == "profile"
    assert started.params["topics"] == [topic]
    assert started.params["to_ms"] - started.params["from_ms"] == 24 * HOUR
    assert viewer.post(f"/clusters/local/topics/{topic}/analytics/profile/").status_code == 403

    # A masking rule on the topic hides the profile (it shows values) from the roles it masks for.
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"name": "ids", "topics": topic, "paths": ["$.user"]}]))
    refused = viewer.get(f"/api/jobs/{job_id}/result/")
    assert refused.status_code == 403
    hidden = viewer.get(f"/clusters/local/analytics/jobs/{job_id}/").content.decode()
    assert html.escape("masking rule 'ids' covers topic") in hidden
    assert "hot-a" not in hidden
    assert "profile-fields" not in hidden
    assert viewer.get(f"/api/jobs/{job_id}/").json()["summary"] == {}
    assert logged_in("admin").get(f"/api/jobs/{job_id}/result/").status_code == 200


def test_an_avro_topic_is_profiled_as_its_decoded_documents(spark: Any, conn: Any, schema_registry: str) -> None:
    """Records in the registry's wire format, in two schema versions (v2 adds ``coupon``): the profile reads their
    documents (v1 records read into v2: no coupon), their bytes as written."""
    from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from analytics.formats import page_values, plan_formats
    from broker.schemas.registry import Registry, RegistryConfig
    from tests.integration.kafka_helpers import produce_timed

    def schema(coupon: bool) -> str:
        fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}, {"name": "kind", "type": "string"}]
        if coupon:
            fields.append({"name": "coupon", "type": ["null", "string"], "default": None})
        return json.dumps({"type": "record", "name": "Order", "namespace": "test.profile", "fields": fields})

    topic = create_topic(unique("profile-avro"), partitions=2)
    client = SchemaRegistryClient({"url": schema_registry, "timeout": 10})
    conf = {"auto.register.schemas": True, "subject.name.strategy": topic_subject_name_strategy}
    v1, v2 = AvroSerializer(client, schema(False), conf=conf), AvroSerializer(client, schema(True), conf=conf)
    context = SerializationContext(topic, MessageField.VALUE)
    records = []
    for i in range(300):
        doc: dict[str, Any] = {"id": i, "kind": KINDS[i % 5]}
        value = v1(doc, context) if i < 120 else v2({**doc, "coupon": None if i % 3 else f"C{i % 7}"}, context)
        records.append((f"k{i % 9}".encode(), value, BASE + i * 1_000))
    produce_timed(topic, records)
    ranges = get_ranges(conn, [topic], None, None)
    formats = plan_formats(ranges, page_values(conn), Registry(RegistryConfig(url=schema_registry, timeout=10)))
    result = run_profile(spark, topic, kafka_options(config(), Path("/tmp")), ranges, unique("p"), formats=formats)
    rows = {r["field"]: r for r in result.rows}
    assert set(rows) == {"id", "kind", "coupon"}
    assert rows["id"]["types"] == {"integer": 300}
    assert (rows["id"]["min"], rows["id"]["max"]) == (0, 299)
    assert [(t["value"], t["count"]) for t in rows["kind"]["top"]] == sorted(
        Counter(KINDS[i % 5] for i in range(300)).items(), key=lambda kv: (-kv[1], kv[0])
    )
    with_coupon = sum(1 for i in range(120, 300) if i % 3 == 0)
    assert rows["coupon"]["null_rate"] == (300 - with_coupon) / 300  # null, or absent from the document
    assert rows["coupon"]["types"] == {"string": with_coupon}
    assert result.summary["bytes"] == sum(len(k) + len(v) for k, v, _ in records)  # as written, framing and all
    assert any("Avro" in n for n in result.notes)
