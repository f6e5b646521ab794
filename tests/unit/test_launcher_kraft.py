"""The embedded cluster's KRaft-mode and Kafka 4 files and choices, without starting a process."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from broker.local import configs, kraft, launcher, versions
from broker.local.layout import ClusterLayout, free_controller_port_offset


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_a_combined_node_is_broker_and_controller_of_a_static_quorum(tmp_path: Path) -> None:
    layout = ClusterLayout(data=str(tmp_path), base_port=15092, kraft=True)
    p = props(configs.broker_properties(layout, 1))
    assert p["process.roles"] == "broker,controller"
    assert p["node.id"] == "1"
    assert p["controller.quorum.voters"] == "0@127.0.0.1:15192,1@127.0.0.1:15193,2@127.0.0.1:15194"
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:15093,CONTROLLER://127.0.0.1:15193"
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:15093"  # clients never see the controller listener
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert not {"broker.id", "zookeeper.connect", "controlled.shutdown.max.retries"} & p.keys()
    assert layout.zookeeper_connect == ""


def test_separate_controllers_have_their_own_ids_ports_and_files(tmp_path: Path) -> None:
    layout = ClusterLayout(data=str(tmp_path), base_port=15092, kraft=True, controllers=3)
    assert layout.controller_ids == [100, 101, 102]
    assert layout.process_names == [
        "controller-100",
        "controller-101",
        "controller-102",
        "broker-0",
        "broker-1",
        "broker-2",
    ]
    broker = props(configs.broker_properties(layout, 0))
    assert broker["process.roles"] == "broker"
    assert broker["listeners"] == "PLAINTEXT://127.0.0.1:15092"
    assert broker["controller.quorum.voters"] == "100@127.0.0.1:15192,101@127.0.0.1:15193,102@127.0.0.1:15194"
    controller = props(configs.controller_properties(layout, 101))
    assert controller["process.roles"] == "controller"
    assert controller["node.id"] == "101"
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:15193"
    assert controller["log.dirs"] == str(tmp_path / "kafka-logs-101")


def test_kafka_4_logs_with_log4j2_into_a_file_per_process(tmp_path: Path) -> None:
    layout = ClusterLayout(data=str(tmp_path), kraft=True, kafka_version="4.3.0")
    configs.write_configs(layout)
    assert configs.logging_flag(layout) == f"-Dlog4j2.configurationFile={tmp_path / 'config' / 'log4j2.properties'}"
    p = props((tmp_path / "config" / "log4j2.properties").read_text())
    assert p["appender.file.fileName"] == "${sys:kafka.logs.dir}/server.log"
    assert p["rootLogger.appenderRef.file.ref"] == "file"
    assert not (tmp_path / "config" / "zookeeper.properties").exists()
    broker = props((tmp_path / "config" / "server-0.properties").read_text())
    assert broker["share.coordinator.state.topic.replication.factor"] == "3"


def test_kafka_3_in_kraft_mode_still_logs_with_log4j_1(tmp_path: Path) -> None:
    layout = ClusterLayout(data=str(tmp_path), kraft=True)
    assert configs.logging_flag(layout).startswith("-Dlog4j.configuration=file:")
    assert "share.coordinator" not in configs.broker_properties(layout, 0)


def test_a_kraft_secure_listener_maps_all_three_listeners(tmp_path: Path) -> None:
    offset = free_controller_port_offset(100, 3, 0)
    layout = ClusterLayout(
        data=str(tmp_path), base_port=9300, kraft=True, sasl_ssl_port_offset=100, controller_port_offset=offset
    )
    p = props(configs.broker_properties(layout, 0, []))
    assert offset == 200  # base + 100 is the SASL_SSL listener's
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:9300,SASL_SSL://127.0.0.1:9400,CONTROLLER://127.0.0.1:9500"
    assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"


def test_a_kafka_4_release_implies_kraft_and_gets_its_own_jars_folder(tmp_path: Path) -> None:
    layout, _ = launcher._resolve_layout(tmp_path, 3, 2181, 9092, None, kafka_version="4.3.0")
    assert layout.kraft
    assert layout.combined
    assert layout.release.jars.name == "jars-4.3.0"
    assert layout.release.pom.name == "pom-kafka4.xml"
    assert versions.release().jars.name == "jars"


@pytest.mark.parametrize(
    ("version", "tool", "main_class"),
    [
        ("3.9.1", "DumpLogSegments", "kafka.tools.DumpLogSegments"),
        ("4.3.0", "DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments"),
        ("4.3.0", "StorageTool", "kafka.tools.StorageTool"),
        ("4.3.0", "ConsumerPerformance", "org.apache.kafka.tools.ConsumerPerformance"),
    ],
)
def test_each_release_knows_where_its_tools_live(version: str, tool: str, main_class: str) -> None:
    assert versions.release(version).tool(tool) == main_class


@pytest.mark.parametrize("version", ["2.8.2", "3.6.2", "5.0", "latest", "4.3.0; rm"])
def test_a_version_the_cluster_cannot_run_is_refused(version: str) -> None:
    with pytest.raises(versions.UnsupportedVersion):
        versions.release(version)


def test_a_cluster_id_is_what_kafka_storage_accepts() -> None:
    for _ in range(50):
        found = kraft.new_cluster_id()
        assert len(found) == 22
        assert not found.startswith("-")
        assert len(base64.urlsafe_b64decode(found + "==")) == 16


def test_a_layout_saved_before_kraft_existed_loads_as_zookeeper_mode(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text(
        json.dumps({"data": str(tmp_path), "brokers": 3, "zookeeper_port": 2181, "base_port": 9092, "pids": {}})
    )
    loaded = ClusterLayout.load(tmp_path)
    assert loaded is not None
    assert (loaded.mode, loaded.kafka_version, loaded.controller_ids) == ("zookeeper", "3.9.1", [])
