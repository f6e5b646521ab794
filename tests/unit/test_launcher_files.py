from __future__ import annotations

from pathlib import Path

import pytest

from broker.local import launcher


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_each_broker_gets_its_own_id_port_and_log_dir(tmp_path: Path) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), brokers=3, zookeeper_port=2300, base_port=9300)
    seen = set()
    for b in layout.broker_ids:
        p = props(launcher.broker_properties(layout, b))
        assert p["broker.id"] == str(b)
        assert p["listeners"] == f"PLAINTEXT://127.0.0.1:{9300 + b}"
        assert p["advertised.listeners"] == p["listeners"]
        assert p["zookeeper.connect"] == "127.0.0.1:2300"
        assert p["log.dirs"].endswith(f"kafka-logs-{b}")
        seen.add(p["log.dirs"])
    assert len(seen) == 3
    assert layout.bootstrap_servers == "127.0.0.1:9300,127.0.0.1:9301,127.0.0.1:9302"


@pytest.mark.parametrize(("brokers", "rf", "min_isr"), [(1, "1", "1"), (2, "2", "2"), (3, "3", "2"), (5, "3", "2")])
def test_internal_topics_replication_fits_the_number_of_brokers(
    tmp_path: Path, brokers: int, rf: str, min_isr: str
) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), brokers=brokers)
    p = props(launcher.broker_properties(layout, 0))
    assert p["offsets.topic.replication.factor"] == rf
    assert p["transaction.state.log.replication.factor"] == rf
    assert p["transaction.state.log.min.isr"] == min_isr


def test_zookeeper_listens_on_loopback_at_the_chosen_port(tmp_path: Path) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), zookeeper_port=2399)
    p = props(launcher.zookeeper_properties(layout))
    assert p["clientPort"] == "2399"
    assert p["clientPortAddress"] == "127.0.0.1"
    assert p["dataDir"] == str(tmp_path / "zookeeper")


def test_the_layout_survives_a_save_and_load(tmp_path: Path) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), brokers=2, pids={"zookeeper": 12})
    layout.save()
    loaded = launcher.ClusterLayout.load(tmp_path)
    assert loaded == layout
    assert launcher.ClusterLayout.load(tmp_path / "nothing") is None


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ("garbage", None),
    ],
)
def test_it_reads_the_java_major_version(output: str, major: int | None) -> None:
    assert launcher._java_major(output) == major


def test_a_taken_port_is_detected() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert launcher.port_in_use(port)
        assert launcher.port_open(port)
    assert not launcher.port_open(port)


def test_a_recycled_pid_of_another_program_is_not_ours() -> None:
    import os

    assert not launcher.pid_alive(os.getpid())  # this pytest is alive but not a JVM from our jars
    assert not launcher.pid_alive(None)


def test_a_listener_that_does_not_speak_kafka_is_not_a_ready_broker() -> None:
    import socket
    import threading

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def accept_and_stay_silent() -> None:
            conn, _ = server.accept()
            conn.recv(100)
            threading.Event().wait(1.5)
            conn.close()

        threading.Thread(target=accept_and_stay_silent, daemon=True).start()
        assert launcher.broker_answers(port, timeout=0.5) is False
    assert launcher.broker_answers(port, timeout=0.5) is False


def test_a_secure_layout_adds_a_sasl_ssl_listener_that_requires_client_certificates(tmp_path: Path) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), brokers=2, base_port=9300, sasl_ssl_port_offset=100)
    users = [
        launcher.SaslUser("plain-user", "pw-plain", ("PLAIN",)),
        launcher.SaslUser("scram-user", "pw-scram", ("SCRAM-SHA-256", "SCRAM-SHA-512")),
    ]
    p = props(launcher.broker_properties(layout, 1, users))
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:9301,SASL_SSL://127.0.0.1:9401"
    assert p["advertised.listeners"] == p["listeners"]
    assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL"
    assert p["inter.broker.listener.name"] == "PLAINTEXT"
    assert p["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert p["listener.name.sasl_ssl.ssl.client.auth"] == "required"
    assert p["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert p["listener.name.sasl_ssl.ssl.keystore.location"] == str(tmp_path / "certs" / "broker.pem")
    assert p["listener.name.sasl_ssl.ssl.truststore.location"] == str(tmp_path / "certs" / "ca.pem")
    # PLAIN users live in the file; SCRAM users in ZooKeeper, so their passwords are not here.
    assert 'user_plain-user="pw-plain"' in p["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    assert "pw-scram" not in launcher.broker_properties(layout, 1, users)
    assert p["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"].startswith(
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
    )
    assert layout.sasl_ssl_bootstrap_servers == "127.0.0.1:9400,127.0.0.1:9401"


def test_the_default_layout_has_no_secure_settings(tmp_path: Path) -> None:
    text = launcher.broker_properties(launcher.ClusterLayout(data=str(tmp_path)), 0)
    assert "SASL" not in text
    assert "ssl." not in text
    with pytest.raises(launcher.LauncherError, match="no SASL_SSL listener"):
        launcher.ClusterLayout(data=str(tmp_path)).sasl_ssl_port(0)


def test_a_layout_saved_before_secure_listeners_existed_still_loads(tmp_path: Path) -> None:
    import json

    (tmp_path / "cluster.json").write_text(
        json.dumps({"data": str(tmp_path), "brokers": 1, "zookeeper_port": 2300, "base_port": 9300, "pids": {}})
    )
    loaded = launcher.ClusterLayout.load(tmp_path)
    assert loaded is not None
    assert loaded.secure is False


def test_secure_configs_keep_their_secrets_private_and_stable(tmp_path: Path) -> None:
    layout = launcher.ClusterLayout(data=str(tmp_path), brokers=1, sasl_ssl_port_offset=100)
    launcher.write_configs(layout)
    listener = launcher.secure_listener(layout)
    for private in (layout.secrets_path, tmp_path / "config" / "server-0.properties", listener.client_key):
        assert private.stat().st_mode & 0o777 == 0o600, private
    assert {u.name for u in listener.users} == {launcher.PLAIN_USER, launcher.SCRAM_USER}
    assert all(u.password not in repr(u) for u in listener.users)
    launcher.write_configs(layout)  # a later `up` keeps the users and their passwords
    assert launcher.secure_listener(layout).users == listener.users
    layout.save()
    env = launcher.secure_env(tmp_path, "PLAIN")
    assert env["KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["KAFKA_SASL_USERNAME"] == launcher.PLAIN_USER
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:9192"
    assert Path(env["KAFKA_SSL_CAFILE"]).is_file()


def test_a_sasl_ssl_offset_that_overlaps_the_brokers_ports_is_refused(tmp_path: Path) -> None:
    with pytest.raises(launcher.LauncherError, match="at least the number of brokers"):
        launcher.up(tmp_path, brokers=3, sasl_ssl_port_offset=2, echo=lambda _: None)
    assert not (tmp_path / "cluster.json").exists()
