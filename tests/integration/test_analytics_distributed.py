# ruff: noqa: S608 - the queries name topics this test makes itself
"""Reports on a Spark cluster: a standalone master and one worker from PySpark's own distribution
(analytics/standalone.py, 127.0.0.1 only), started once for this module. A Spark Connect server runs its work
there (what a team's own server on a Spark cluster does), and a job process's own Spark uses the master directly
(``--master spark://...``): a PV/UU report and a SQL query give the same rows as on the session's local server, and
as a count in plain Python. The executors on the worker read Kafka with the connector jars the driver ships them,
and run the Protobuf decoding step in a Python that has the project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from analytics import server, standalone
from analytics.formats import Formats, TopicFormat, TopicSchema, page_values
from analytics.runner import JobSpec, run_report
from analytics.source import kafka_options
from analytics.spark import SparkSettings, SparkUnavailable, connect_session
from analytics.sql import check_sql, run_sql, sample_schemas
from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.demo.web import web_events
from broker.messages.ranges import get_ranges
from broker.schemas import wire
from broker.schemas.model import PROTOBUF
from tests import analytics_reference as ref
from tests.conftest import BOOTSTRAP, REPO, SLOT, SPARK_PORT, TEST_VAR
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

HOUR = 3_600_000
BASE = (int(time.time() * 1000) // HOUR - 3) * HOUR
# The master on MASTER_PORT, its web UI and the worker (and its UI) on the three ports after it; this module's Spark
# Connect server two ports after the session's (whose web UI, off in tests, would take the one after it).
MASTER_PORT = 17077 + 10 * SLOT
CLUSTER_DATA = TEST_VAR / "spark-standalone"
CONNECT_PORT = SPARK_PORT + 2
CONNECT_DATA = TEST_VAR / "spark-connect-standalone"
CONNECTOR_JAR = "spark-sql-kafka-0-10_2.13-4.2.0.jar"
SCHEMA_ID = 7001  # the Protobuf topic's schema id (no registry: the test plans the format itself)


def config() -> ClusterConfig:
    return ClusterConfig(name="test", bootstrap_servers=split_servers(BOOTSTRAP), timeout=10)


@pytest.fixture(scope="module")
def conn(kafka_cluster: Any) -> Iterator[ClusterConnection]:
    connection = ClusterConnection(config())
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[standalone.StandaloneState]:
    """The module's standalone master and worker (2 cores, each application 1 of them, so the Spark Connect server
    and a job's own Spark run side by side), fresh, stopped after the module."""
    standalone.stop(CLUSTER_DATA, echo=lambda _: None)  # one a crashed run left behind
    shutil.rmtree(CLUSTER_DATA, ignore_errors=True)
    try:
        state = standalone.start(CLUSTER_DATA, port=MASTER_PORT, cores=2, memory="2g", app_cores=1, echo=lambda _: None)
    except SparkUnavailable as exc:
        pytest.fail(f"the Spark standalone cluster did not start: {exc}", pytrace=False)
    try:
        yield state
    finally:
        standalone.stop(CLUSTER_DATA, echo=lambda _: None)


@pytest.fixture(scope="module")
def cluster_spark(cluster: standalone.StandaloneState) -> Iterator[Any]:
    """A session on a Spark Connect server whose work runs on the module's cluster."""
    server.stop(CONNECT_DATA, echo=lambda _: None)
    settings = SparkSettings(
        master=cluster.url, driver_memory="512m", ui=False, shuffle_partitions=2, app_name="kazami-tests-standalone"
    )
    try:
        state = server.start(CONNECT_DATA, port=CONNECT_PORT, settings=settings, echo=lambda _: None)
    except SparkUnavailable as exc:
        pytest.fail(f"the Spark Connect server on {cluster.url} did not start: {exc}", pytrace=False)
    session = connect_session(state.remote(CONNECT_DATA.resolve()))
    try:
        yield session
    finally:
        session.stop()
        server.stop(CONNECT_DATA, echo=lambda _: None)


@pytest.fixture(scope="module")
def events(kafka_cluster: Any) -> tuple[str, list[tuple[bytes | None, bytes | None, int]]]:
    """3,000 generated web events over three hours in 3 partitions; returns the topic and what was written."""
    topic = create_topic(unique("dist-events"), partitions=3)
    generated = web_events(3000, BASE, BASE + 3 * HOUR, seed=29, users=300)
    written: list[tuple[bytes | None, bytes | None, int]] = [(e.key, e.value, e.timestamp_ms) for e in generated]
    produce_timed(topic, written)
    return topic, written


def web_event_file() -> Any:
    """A Protobuf file of one message, WebEvent, with a field of presence for each of the events' fields (the
    timestamp an int64, the others strings), as a FileDescriptorProto."""
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto(name="kazami_dist/web.proto", package="kazami.dist", syntax="proto2")
    message = proto.message_type.add(name="WebEvent")
    names = ("type", "ts", "user_id", "session_id", "url", "referrer", "impression_id", "ad_id", "campaign_id")
    for number, name in enumerate((*names, "keyword", "network"), start=1):
        message.field.add(
            name=name,
            number=number,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64
            if name == "ts"
            else descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        )
    return proto


@pytest.fixture(scope="module")
def proto_events(events: Any) -> tuple[str, Formats]:
    """The same events in the registry's wire format as Protobuf (schema id SCHEMA_ID), and the format a job would
    plan for the topic: every record decoded by analytics.formats' Python step, in the executors' Python."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    _, written = events
    proto = web_event_file()
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kazami.dist.WebEvent"))
    topic = create_topic(unique("dist-proto"), partitions=2)
    records = []
    for key, value, ts in written:
        message = cls(**json.loads(value or b"{}"))
        records.append((key, wire.frame(SCHEMA_ID, wire.write_indexes([0]) + message.SerializeToString()), ts))
    produce_timed(topic, records)
    schema = TopicSchema(
        id=SCHEMA_ID,
        schema_type=PROTOBUF,
        descriptors=descriptor_pb2.FileDescriptorSet(file=[proto]).SerializeToString(),
        main=proto.name,
    )
    return topic, Formats({topic: TopicFormat(topic, schemas=(schema,), sampled=len(records), framed=len(records))})


@pytest.fixture(scope="module")
def local_pv_uu(spark: Any, conn: ClusterConnection, events: Any) -> Any:
    """The PV/UU report over ``events`` on the session's local server, once for the module's comparisons."""
    return report(spark, conn, events[0])


def report(spark: Any, conn: ClusterConnection, topic: str, formats: Formats | None = None) -> Any:
    spec = JobSpec(report="pv_uu", topics=(topic,), bucket="hour")
    ranges = get_ranges(conn, [topic], None, None)
    return run_report(spark, spec, kafka_options(config(), Path("/tmp")), ranges, unique("dist"), formats=formats)


def sql(spark: Any, conn: ClusterConnection, text: str) -> Any:
    query = check_sql(text)
    ranges = get_ranges(conn, list(query.topics), None, None)
    schemas = sample_schemas(ranges, page_values(conn))
    return run_sql(spark, query, kafka_options(config(), Path("/tmp")), ranges, schemas, unique("dist"), 10_000, 300)


def executor_folders(cluster: standalone.StandaloneState) -> list[Path]:
    """The folders the worker gave its executors (work/<application>/<executor>)."""
    return sorted(p for p in (CLUSTER_DATA / "work").glob("app-*/*") if p.is_dir())


def applications(cluster: standalone.StandaloneState) -> dict[str, dict[str, Any]]:
    """The applications the master runs, by name."""
    found = standalone.overview(cluster) or {}
    return {a["name"]: a for a in found.get("activeapps") or []}


def test_the_cluster_listens_on_loopback_only(cluster: standalone.StandaloneState) -> None:
    listed = standalone.workers(cluster)
    assert [(w["host"], w["port"], w["state"], w["cores"]) for w in listed] == [
        ("127.0.0.1", cluster.worker_port, "ALIVE", 2)
    ]
    listening = Path("/proc/net/tcp").read_text().splitlines()[1:] + Path("/proc/net/tcp6").read_text().splitlines()[1:]
    ours = {cluster.port, cluster.ui_port, cluster.worker_port, cluster.worker_ui_port}
    bound = {}
    for line in listening:
        local, state = line.split()[1], line.split()[3]
        address, port = local.rsplit(":", 1)
        if state == "0A" and int(port, 16) in ours:  # LISTEN
            bound[int(port, 16)] = address
    assert set(bound) == ours, bound
    # 127.0.0.1 as /proc writes it: 0100007F, or in an IPv6 socket ::ffff:127.0.0.1.
    assert all(a.endswith("0100007F") for a in bound.values()), bound


def test_a_report_and_a_query_on_the_cluster_give_the_local_rows(
    spark: Any,
    cluster_spark: Any,
    cluster: standalone.StandaloneState,
    conn: ClusterConnection,
    events: Any,
    local_pv_uu: Any,
) -> None:
    topic, written = events
    local = local_pv_uu
    distributed = report(cluster_spark, conn, topic)
    assert distributed.rows == local.rows
    assert {(r["bucket_start"], r["url"]): (r["pv"], r["uu"]) for r in local.rows} == ref.pv_uu(
        ref.read(written, None, None), "hour"
    )
    assert (distributed.input_rows, distributed.malformed) == (local.input_rows, local.malformed) == (len(written), {})

    text = (
        "SELECT partition, fields.type AS type, count(*) AS n, count(DISTINCT fields.user_id) AS users "
        f"FROM `{topic}` GROUP BY partition, fields.type ORDER BY partition, type"
    )
    local_sql, distributed_sql = sql(spark, conn, text), sql(cluster_spark, conn, text)
    assert distributed_sql.rows == local_sql.rows
    by_partition: dict[tuple[int, str], list[str]] = {}
    for partition, _offset, doc in _with_partitions(topic, written):
        by_partition.setdefault((partition, doc["type"]), []).append(doc["user_id"])
    assert {(r["partition"], r["type"]): (r["n"], r["users"]) for r in local_sql.rows} == {
        key: (len(users), len(set(users))) for key, users in by_partition.items()
    }

    # It ran on the worker: the server is an application of the master, and its executor fetched the Kafka
    # connector the driver ships (spark.jars) into the folder the worker gave it.
    app = applications(cluster)["kazami-tests-standalone"]
    assert app["cores"] == 1
    folders = [f for f in executor_folders(cluster) if f.parent.name == app["id"]]
    assert folders, f"no executor folder of {app['id']} in {CLUSTER_DATA / 'work'}"
    assert (folders[0] / CONNECTOR_JAR).is_file()


def _with_partitions(topic: str, written: list[Any]) -> list[tuple[int, int, Any]]:
    """Each record of ``topic`` with its partition and offset, read back with kafka-python (an independent client);
    the documents match what was written."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        found: list[tuple[int, int, Any]] = []
        deadline = time.monotonic() + 60
        while len(found) < len(written) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                found += [(r.partition, r.offset, json.loads(r.value)) for r in records]
    finally:
        consumer.close()
    assert Counter(json.dumps(d, sort_keys=True) for _, _, d in found) == Counter(
        json.dumps(json.loads(v), sort_keys=True) for _, v, _ in written
    )
    return found


def test_the_protobuf_step_runs_in_the_executors_python_with_the_project(
    spark: Any, cluster_spark: Any, cluster: standalone.StandaloneState, conn: ClusterConnection, proto_events: Any
) -> None:
    from pyspark.sql import functions as F

    def where(_: Any) -> str:
        import os
        import sys

        import analytics.formats  # noqa: F401 - what the Protobuf step imports

        return json.dumps({"python": sys.executable, "cwd": os.getcwd()})

    probe = F.udf(where, "string", useArrow=False)
    seen = [json.loads(r[0]) for r in cluster_spark.range(4).select(probe("id")).distinct().collect()]
    assert seen
    # Python workers of an executor on the worker (in the folder the worker gave it), not the driver's.
    assert all(Path(s["cwd"]).is_relative_to(CLUSTER_DATA.resolve() / "work") for s in seen), seen
    assert {s["python"] for s in seen} == {sys.executable}

    topic, formats = proto_events
    local = report(spark, conn, topic, formats)
    distributed = report(cluster_spark, conn, topic, formats)
    assert distributed.rows == local.rows
    assert distributed.malformed == local.malformed == {}
    assert distributed.input_rows == local.input_rows > 0
    assert distributed.rows, "the Protobuf events gave no rows"


def test_a_job_process_own_spark_on_the_master_gives_the_local_rows(
    cluster: standalone.StandaloneState, events: Any, local_pv_uu: Any
) -> None:
    topic, _ = events
    local = local_pv_uu
    # A new process, as a job without a Spark Connect server: classic Spark with the master's address.
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    # Its driver on loopback, as everything of the module's cluster (start_session leaves a spark:// driver's
    # address to Spark, which is the host name's, or KAZAMI_SPARK_DRIVER_HOST).
    env.update({"KAZAMI_SPARK_REMOTE": "", "SPARK_LOCAL_IP": "127.0.0.1"})
    env.pop("SPARK_CONF_DIR", None)
    before = set(executor_folders(cluster))
    args = ["-m", "analytics", "run", "pv_uu", "--topics", topic, "--bucket", "hour", "--master", cluster.url]
    done = subprocess.run(
        [sys.executable, *args, "--bootstrap-servers", BOOTSTRAP],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["rows"] == local.rows
    assert result["input_rows"] == local.input_rows
    # Its executor ran on the worker, with the connector its driver shipped.
    new = [p for p in executor_folders(cluster) if p not in before]
    assert len(new) == 1, new
    assert (new[0] / CONNECTOR_JAR).is_file()
