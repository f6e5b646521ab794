"""The `python -m broker.local` command against real ZooKeeper and Kafka processes.

Uses a one-broker cluster of its own (ports 12281 / 19192), so stopping everything here
does not disturb the session's three-broker cluster; and shows the console recovering
by itself when that cluster goes away and comes back.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from tests.conftest import REPO, TEST_VAR, logged_in

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("it starts a ZooKeeper-mode cluster of its own, run by the ZooKeeper session"),
]

ZK_PORT = 12281
BASE_PORT = 19192
DATA = TEST_VAR / "lifecycle"


def cli(*args: str, data: Path = DATA, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.local", "--data", str(data), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def status(data: Path = DATA) -> dict:  # type: ignore[type-arg]
    result = cli("status", data=data)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def small_cluster() -> Iterator[Path]:
    cli("down")
    shutil.rmtree(DATA, ignore_errors=True)
    result = cli("up", "--brokers", "1", "--zookeeper-port", str(ZK_PORT), "--base-port", str(BASE_PORT))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Broker 0     127.0.0.1:{BASE_PORT}" in result.stdout
    assert "Controller   broker 0" in result.stdout
    yield DATA
    cli("down")


def test_up_starts_zookeeper_and_the_broker_and_status_reports_them(small_cluster: Path) -> None:
    s = status()
    assert s["zookeeper"]["address"] == f"127.0.0.1:{ZK_PORT}"
    assert s["zookeeper"]["alive"] is True
    assert s["brokers"] == [
        {
            "id": 0,
            "address": f"127.0.0.1:{BASE_PORT}",
            "pid": s["brokers"][0]["pid"],
            "alive": True,
            "registered": True,
        }
    ]
    assert s["controller"] == 0
    # The pid is a real JVM running Kafka.
    cmdline = Path(f"/proc/{s['brokers'][0]['pid']}/cmdline").read_bytes()
    assert b"kafka.Kafka" in cmdline


def test_up_again_does_nothing_and_says_so(small_cluster: Path) -> None:
    before = status()
    result = cli("up", "--brokers", "1", "--zookeeper-port", str(ZK_PORT), "--base-port", str(BASE_PORT))
    assert result.returncode == 0
    assert "already up: nothing to do" in result.stdout
    assert status()["brokers"][0]["pid"] == before["brokers"][0]["pid"]


def test_logs_are_written_under_the_data_folder(small_cluster: Path) -> None:
    log = small_cluster / "logs" / "broker-0" / "server.log"
    assert log.exists()
    assert "started (kafka.server.KafkaServer)" in log.read_text()
    assert (small_cluster / "config" / "server-0.properties").exists()


def test_stop_broker_and_start_broker(small_cluster: Path) -> None:
    result = cli("stop-broker", "0")
    assert result.returncode == 0, result.stderr
    s = status()
    assert s["brokers"][0]["alive"] is False
    assert s["brokers"][0]["registered"] is False
    assert s["controller"] is None

    result = cli("start-broker", "0")
    assert result.returncode == 0, result.stderr
    s = status()
    assert s["brokers"][0]["alive"] is True
    assert s["brokers"][0]["registered"] is True


def test_an_unknown_broker_id_is_a_clear_error(small_cluster: Path) -> None:
    result = cli("stop-broker", "7")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: No broker 7: this cluster has brokers [0]."


def test_a_taken_port_gives_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        result = cli("up", "--brokers", "1", "--zookeeper-port", str(port), "--base-port", "19392", data=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"Port {port} on 127.0.0.1 is already in use" in lines[0]
    assert "Traceback" not in result.stderr


def test_missing_java_gives_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    result = subprocess.run(
        [sys.executable, "-m", "broker.local", "--data", str(tmp_path), "up"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: Java 17 or newer is needed")
    assert "Traceback" not in result.stderr


def test_status_without_a_cluster_says_how_to_start_one(tmp_path: Path) -> None:
    result = cli("status", data=tmp_path / "none")
    assert result.returncode == 2
    assert "python -m broker.local up" in result.stderr


@pytest.mark.django_db
def test_the_console_recovers_by_itself_when_the_cluster_returns(
    small_cluster: Path, clusters_reset: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Runs last in this module: it takes the small cluster down and up again."""
    file = tmp_path / "clusters.toml"
    file.write_text(f'[clusters.small]\nbootstrap_servers = ["127.0.0.1:{BASE_PORT}"]\n')
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    client = logged_in()
    assert client.get("/api/clusters/small/").status_code == 200
    bootstrap = [f"127.0.0.1:{BASE_PORT}"]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, bootstrap_timeout_ms=10_000)
    admin.create_topics([NewTopic("survives-restart", 2, 1)])
    admin.wait_for_topics(["survives-restart"], timeout_ms=20_000)
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(10):
        producer.send("survives-restart", key=b"k", value=f"m{i}".encode())
    producer.flush(timeout=20)
    producer.close()

    assert cli("down").returncode == 0
    assert all(not b["alive"] for b in status()["brokers"])
    started = time.monotonic()
    response = client.get("/api/clusters/small/")
    assert response.status_code == 503
    assert time.monotonic() - started < 3.5
    assert response.json()["error"] == "cluster_unavailable"

    assert cli("up").returncode == 0  # the saved layout: same ports, same data
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = client.get("/api/clusters/small/")
        if response.status_code == 200:
            break
        time.sleep(0.5)
    assert response.status_code == 200
    assert [b["id"] for b in response.json()["brokers"] if b["alive"]] == [0]

    # The data folder survived down/up: the topic and its ten messages are still there.
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10_000, group_id=None
    )
    consumer.subscribe(["survives-restart"])
    values = sorted(message.value for message in consumer)
    consumer.close()
    assert values == sorted(f"m{i}".encode() for i in range(10))


def test_up_kraft_runs_kafka_3_9_without_zookeeper_in_combined_nodes_and_the_console_knows() -> None:
    from broker.client.config import ClusterConfig
    from broker.client.connection import ClusterConnection
    from broker.cluster.quorum import get_quorum

    data = TEST_VAR / "lifecycle-kraft"
    port = BASE_PORT + 4
    cli("down", data=data)
    shutil.rmtree(data, ignore_errors=True)
    try:
        result = cli("up", "--kraft", "--brokers", "1", "--base-port", str(port), data=data)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "KRaft        Kafka 3.9" in result.stdout
        assert not (data / "zookeeper").exists()
        conn = ClusterConnection(ClusterConfig("kraft39", (f"127.0.0.1:{port}",), zookeeper_connect="127.0.0.1:2181"))
        try:
            from broker.cluster.overview import get_overview

            overview = get_overview(conn)
            assert (overview.mode, overview.version, overview.controller) == ("kraft", "3.9", 0)
            assert overview.controller_is_broker  # a combined node is broker and controller at once
            assert [b.is_controller for b in overview.brokers] == [True]
            assert overview.zookeeper_ignored == "127.0.0.1:2181"
            quorum = get_quorum(conn)
            assert ([v.id for v in quorum.voters], quorum.leader_id, quorum.leader_is_broker) == ([0], 0, True)
        finally:
            conn.close()
    finally:
        cli("down", data=data)
