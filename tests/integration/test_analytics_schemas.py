"""Spark reports and SQL over topics in a schema registry's wire format (issue 28), on real Spark, the real test
cluster and the real registry (Apicurio from Maven Central): the same web events written once as JSON and once
with confluent-kafka's own AvroSerializer, in two schema versions (the second adds a field), give the same
PV/UU, CTR and shares, each also equal to a plain-Python count; SQL over the Avro topic reads decoded columns,
the older records read into the latest version; JSON Schema records too; a topic of framed records with no
registry, or a registry that does not answer, stops the job before Spark with the reason."""

from __future__ import annotations

import importlib
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    reference_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from analytics.formats import SchemaUnavailable, page_values, plan_formats, table
from analytics.runner import JobSpec, run_reports
from analytics.source import kafka_options, read_range
from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.demo.web import web_events
from broker.messages.ranges import get_ranges
from broker.schemas.registry import Registry, RegistryConfig
from tests import analytics_reference as ref
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000
# Whole hours, so hour buckets hold whole hours of data; recent, so retention keeps every record.
BASE = (int(time.time() * 1000) // HOUR - 3) * HOUR
TIMEOUT = 10
FIELDS = ("session_id", "url", "referrer", "impression_id", "ad_id", "campaign_id", "network")


def avro_schema(with_keyword: bool) -> str:
    optional = [*FIELDS, "keyword"] if with_keyword else list(FIELDS)
    return json.dumps(
        {
            "type": "record",
            "name": "WebEvent",
            "namespace": "test.web",
            "fields": [
                {"name": "type", "type": "string"},
                {"name": "ts", "type": "long"},
                {"name": "user_id", "type": "string"},
                *[{"name": name, "type": ["null", "string"], "default": None} for name in optional],
            ],
        }
    )


JSON_SCHEMA = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "WebEvent",
        "type": "object",
        "properties": {"type": {"type": "string"}, "ts": {"type": "integer"}, "user_id": {"type": "string"}},
        "required": ["type", "ts", "user_id"],
    }
)


# A web event in Protobuf: the second message of its file (message index [1]), importing another registered
# file (a reference); the optional fields have presence, so an absent one is absent from the JSON as well.
COMMON_PROTO = 'syntax = "proto3";\npackage kazami.webtest.common;\nmessage Origin { string host = 1; }\n'
EVENT_PROTO = """syntax = "proto3";
package kazami.webtest;
import "kazami_webtest/common.proto";
message Ping { string id = 1; }
message WebEvent {
  string type = 1;
  int64 ts = 2;
  string user_id = 3;
  optional string session_id = 4;
  optional string url = 5;
  optional string referrer = 6;
  optional string keyword = 7;
  optional string impression_id = 8;
  optional string ad_id = 9;
  optional string campaign_id = 10;
  optional string network = 11;
  kazami.webtest.common.Origin origin = 12;
}
"""


def serializer_conf() -> dict[str, Any]:
    return {"auto.register.schemas": True, "subject.name.strategy": topic_subject_name_strategy}


def config() -> ClusterConfig:
    return ClusterConfig(name="test", bootstrap_servers=split_servers(BOOTSTRAP), timeout=10)


@pytest.fixture(scope="module")
def connection(kafka_cluster: Any) -> Any:
    conn = ClusterConnection(config())
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def written(kafka_cluster: Any, schema_registry: str) -> dict[str, Any]:
    """400 web events over two hours, written to a JSON topic as they are, to an Avro topic with
    AvroSerializer (the first half with v1 of the schema, the rest with v2, which adds ``keyword``), and to a
    JSON Schema topic with JSONSerializer."""
    events = [(e.key, e.value, e.timestamp_ms) for e in web_events(400, BASE, BASE + 2 * HOUR, seed=5, users=60)]
    client = SchemaRegistryClient({"url": schema_registry, "timeout": TIMEOUT})
    json_topic = create_topic(unique("web-json"), partitions=2)
    avro_topic = create_topic(unique("web-avro"), partitions=2)
    schema_topic = create_topic(unique("web-jsonschema"), partitions=2)
    produce_timed(json_topic, events)
    v1 = AvroSerializer(client, avro_schema(False), conf=serializer_conf())
    v2 = AvroSerializer(client, avro_schema(True), conf=serializer_conf())
    checked = JSONSerializer(JSON_SCHEMA, client, conf=serializer_conf())
    avro_records, schema_records = [], []
    half = len(events) // 2
    for n, (key, value, ts) in enumerate(events):
        document = json.loads(value or b"{}")
        context = SerializationContext(avro_topic, MessageField.VALUE)
        if n < half:
            avro = v1({name: document.get(name) for name in ("type", "ts", "user_id", *FIELDS)}, context)
        else:
            avro = v2({name: document.get(name) for name in ("type", "ts", "user_id", *FIELDS, "keyword")}, context)
        avro_records.append((key, avro, ts))
        schema_records.append((key, checked(document, SerializationContext(schema_topic, MessageField.VALUE)), ts))
    produce_timed(avro_topic, avro_records)
    produce_timed(schema_topic, schema_records)
    return {"events": events, "json": json_topic, "avro": avro_topic, "json_schema": schema_topic, "half": half}


@pytest.fixture(scope="module")
def proto_topic(written: dict[str, Any], schema_registry: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same events written with ProtobufSerializer (classes generated by protoc, as an application has them)."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("webproto")
    (root / "kazami_webtest").mkdir()
    (root / "kazami_webtest" / "__init__.py").write_text("")
    (root / "kazami_webtest" / "common.proto").write_text(COMMON_PROTO)
    (root / "kazami_webtest" / "events.proto").write_text(EVENT_PROTO)
    args = ["protoc", f"-I{root}", f"--python_out={root}"]
    assert protoc.main([*args, "kazami_webtest/common.proto", "kazami_webtest/events.proto"]) == 0
    sys.path.insert(0, str(root))
    try:
        events_pb2: Any = importlib.import_module("kazami_webtest.events_pb2")
    finally:
        sys.path.remove(str(root))
    client = SchemaRegistryClient({"url": schema_registry, "timeout": TIMEOUT})
    conf = {**serializer_conf(), "reference.subject.name.strategy": reference_subject_name_strategy}
    serialize = ProtobufSerializer(events_pb2.WebEvent, client, conf)
    topic = create_topic(unique("web-proto"), partitions=2)
    records = []
    for key, value, ts in written["events"]:
        document = json.loads(value or b"{}")
        message = events_pb2.WebEvent(**{k: v for k, v in document.items() if v is not None})
        message.origin.host = "test"
        records.append((key, serialize(message, SerializationContext(topic, MessageField.VALUE)), ts))
    produce_timed(topic, records)
    return topic


def registry(url: str, timeout: float = TIMEOUT) -> Registry:
    return Registry(RegistryConfig(url=url, timeout=timeout))


def reports(spark: Any, connection: Any, topic: str, source: Registry | None) -> dict[str, Any]:
    names = ("pv_uu", "ctr", "shares")
    specs = [JobSpec(name, (topic,), bucket="hour") for name in names]
    ranges = get_ranges(connection, [topic], None, None)
    formats = plan_formats(ranges, page_values(connection), source)
    kafka = kafka_options(config(), Path("/tmp"))
    found = run_reports(spark, specs, kafka, ranges, unique("schemas"), formats=formats)
    return dict(zip(names, found, strict=True))


def figures(results: dict[str, Any]) -> dict[str, Any]:
    return {
        "pv_uu": {(r["bucket_start"], r["url"]): (r["pv"], r["uu"]) for r in results["pv_uu"].rows},
        "ctr": {
            (r["bucket_start"], r["campaign_id"], r["ad_id"]): (r["impressions"], r["clicks"])
            for r in results["ctr"].rows
        },
        "unmatched": results["ctr"].summary["unmatched_by_campaign"],
        "shares": {(r["bucket_start"], r["url"], r["network"]): r["shares"] for r in results["shares"].rows},
    }


def test_avro_in_two_schema_versions_gives_the_same_pv_uu_ctr_as_json(
    spark: Any, connection: Any, written: dict[str, Any], schema_registry: str
) -> None:
    source = registry(schema_registry)
    as_json = reports(spark, connection, written["json"], source)
    as_avro = reports(spark, connection, written["avro"], source)
    expected = ref.read(written["events"], None, None)
    table_, unmatched = ref.ctr(expected, "hour")
    assert figures(as_avro) == figures(as_json)
    assert figures(as_avro)["pv_uu"] == ref.pv_uu(expected, "hour")
    assert figures(as_avro)["ctr"] == table_
    assert figures(as_avro)["unmatched"] == unmatched
    assert figures(as_avro)["shares"] == ref.shares(expected, "hour")
    assert len(figures(as_avro)["pv_uu"]) > 10
    assert table_
    for result in as_avro.values():
        assert result.input_rows == len(written["events"])
        assert result.malformed == {}
        # The bytes as written (Avro's), not the decoded JSON's.
        assert 0 < result.input_bytes < as_json["pv_uu"].input_bytes
    # The job says what it read: both schema ids, the subject and versions, read as v2.
    note = next(n for n in as_avro["pv_uu"].notes if n.startswith("Read as"))
    subject = f"{written['avro']}-value"
    assert "Avro, schema id" in note
    assert f"subject {subject} v1 (read as v2)" in note
    assert f"{subject} v2" in note
    assert not any(n.startswith("Read as") for n in as_json["pv_uu"].notes)


def test_json_schema_records_give_the_same_figures(
    spark: Any, connection: Any, written: dict[str, Any], schema_registry: str
) -> None:
    source = registry(schema_registry)
    as_schema = reports(spark, connection, written["json_schema"], source)
    expected = ref.read(written["events"], None, None)
    assert figures(as_schema)["pv_uu"] == ref.pv_uu(expected, "hour")
    assert figures(as_schema)["ctr"] == ref.ctr(expected, "hour")[0]
    assert as_schema["pv_uu"].malformed == {}
    assert "JSON Schema, schema id" in as_schema["pv_uu"].notes[0]


def test_protobuf_records_give_the_same_figures(
    spark: Any, connection: Any, written: dict[str, Any], proto_topic: str, schema_registry: str
) -> None:
    as_proto = reports(spark, connection, proto_topic, registry(schema_registry))
    expected = ref.read(written["events"], None, None)
    table_, unmatched = ref.ctr(expected, "hour")
    got = figures(as_proto)
    assert got["pv_uu"] == ref.pv_uu(expected, "hour")
    assert got["ctr"] == table_
    assert got["unmatched"] == unmatched
    assert got["shares"] == ref.shares(expected, "hour")
    assert as_proto["pv_uu"].malformed == {}
    assert "Protobuf, schema id" in as_proto["pv_uu"].notes[0]
    assert f"subject {proto_topic}-value v1" in as_proto["pv_uu"].notes[0]


def test_sql_over_an_avro_topic_reads_decoded_columns_in_the_latest_version(
    spark: Any, connection: Any, written: dict[str, Any], schema_registry: str
) -> None:
    topic = written["avro"]
    ranges = get_ranges(connection, [topic], None, None)
    formats = plan_formats(ranges, page_values(connection), registry(schema_registry))
    records = read_range(spark, kafka_options(config(), Path("/tmp")), ranges, None, None)
    decoded = table(records, formats, topic)
    rows = spark.sql(
        "SELECT fields.type AS type, count(*) AS n, count(DISTINCT fields.user_id) AS users, "
        "count(fields.keyword) AS keywords, count(DISTINCT schema_id) AS ids FROM {t} GROUP BY fields.type",
        t=decoded,
    ).collect()
    events = [json.loads(v) for _, v, _ in written["events"]]
    later = events[written["half"] :]
    got = {r["type"]: (r["n"], r["users"], r["keywords"]) for r in rows}
    assert got == {
        kind: (
            sum(1 for e in events if e["type"] == kind),
            len({e["user_id"] for e in events if e["type"] == kind}),
            # v1 records have no keyword: read into v2, it is null (its default).
            sum(1 for e in later if e["type"] == kind and e.get("keyword") is not None),
        )
        for kind in {e["type"] for e in events}
    }
    assert max(r["ids"] for r in rows) == 2
    # ``value`` is the decoded document as JSON text.
    first = spark.sql("SELECT value, fields.ts AS ts FROM {t} WHERE fields.type = 'page_view'", t=decoded).first()
    assert first is not None
    assert json.loads(first["value"])["ts"] == first["ts"]


def test_framed_records_without_a_registry_stop_the_job_before_spark(connection: Any, written: dict[str, Any]) -> None:
    ranges = get_ranges(connection, [written["avro"]], None, None)
    with pytest.raises(SchemaUnavailable, match="no schema registry is configured"):
        plan_formats(ranges, page_values(connection), None)
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = registry(f"http://127.0.0.1:{port}/apis/ccompat/v7", timeout=2)
    with pytest.raises(SchemaUnavailable, match="could not give their schemas") as caught:
        plan_formats(ranges, page_values(connection), down)
    assert written["avro"] in str(caught.value)
    # A JSON topic needs no registry.
    plain = plan_formats(get_ranges(connection, [written["json"]], None, None), page_values(connection), None)
    assert not plain.framed
    assert plain.notes() == []


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs are claimed but not started in a process of their own: the test runs them itself."""
    from console.background import jobs

    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)


@pytest.fixture
def console_registry(clusters_reset: None) -> Any:
    """The console's registry and cluster connections forgotten before and after the test."""
    from console.config.registry import reset_for_tests

    reset_for_tests()
    yield
    reset_for_tests()


@pytest.mark.django_db
def test_a_console_job_over_an_avro_topic_says_what_it_read(
    spark: Any, written: dict[str, Any], no_spawn: None, console_registry: None
) -> None:
    from console.background import job_process
    from tests.conftest import logged_in

    client = logged_in("operator")
    body = {"report": "ctr", "topics": [written["avro"]], "bucket": "hour"}
    job_id = client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json").json()["id"]
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    rows = client.get(f"/api/jobs/{job_id}/result/").json()["rows"]
    table_, _ = ref.ctr(ref.read(written["events"], None, None), "hour")
    assert {(r["bucket_start"], r["campaign_id"], r["ad_id"]): (r["impressions"], r["clicks"]) for r in rows} == table_
    status = client.get(f"/api/jobs/{job_id}/").json()
    assert status["malformed"] == {}
    assert any(f"subject {written['avro']}-value v2" in note for note in status["notes"])
    page = client.get(f"/clusters/local/analytics/jobs/{job_id}/").content.decode()
    assert f"subject {written['avro']}-value v1 (read as v2)" in page


@pytest.mark.django_db
def test_a_console_job_with_the_registry_down_fails_before_spark_with_the_reason(
    written: dict[str, Any], no_spawn: None, console_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from console.background import job_process
    from console.config.registry import reset_for_tests
    from tests.conftest import logged_in

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", f"http://127.0.0.1:{port}/apis/ccompat/v7")
    monkeypatch.setenv("SCHEMA_REGISTRY_TIMEOUT", "2")
    reset_for_tests()
    client = logged_in("operator")
    body = {"report": "pv_uu", "topics": [written["avro"]], "bucket": "hour"}
    job_id = client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json").json()["id"]
    done = job_process.execute(job_id)  # no Spark session given: one would start only after the schemas
    assert done.status == "failed"
    assert "wire format" in done.error
    assert f"127.0.0.1:{port}" in done.error
    assert done.spark_ui_url == ""
    assert "Traceback" not in done.error
