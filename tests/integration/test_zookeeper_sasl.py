"""The console's ZooKeeper session authenticating with SASL (DIGEST-MD5, ``ZOOKEEPER_AUTH=sasl:user:pw``)
against a real ZooKeeper from the Kafka jars that requires it (``sessionRequireClientSASLAuth``), started
by this module beside the session's cluster: browsing works with the right credentials, a znode behind a
``sasl`` ACL is readable, and wrong credentials get a clear refusal, never the password in a message."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions

from broker.local import launcher
from broker.local.jvm import check_java, zookeeper_serving
from broker.zk.client import close_clients
from console.config.clusters import get_configs
from tests.conftest import TEST_VAR, ZOOKEEPER_PORT, logged_in

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db,
    pytest.mark.zookeeper("it starts a ZooKeeper of its own from the Kafka 3.9 jars"),
]

SASL_PORT = ZOOKEEPER_PORT + 8  # +5 is the ACL suite's ZooKeeper (tests/acl_cluster.py)
USER, PASSWORD = "kazami", "zk-sasl-pw-9f2"
API = "/api/clusters/local/zookeeper/"


@pytest.fixture(scope="module")
def sasl_zookeeper(kafka_cluster: launcher.ClusterLayout) -> Iterator[str]:
    root = TEST_VAR / "zookeeper-sasl"
    root.mkdir(parents=True, exist_ok=True)
    (root / "jaas.conf").write_text(
        f'Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_{USER}="{PASSWORD}";\n}};\n'
    )
    (root / "zoo.cfg").write_text(
        "\n".join(
            [
                f"dataDir={root / 'data'}",
                f"clientPort={SASL_PORT}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "4lw.commands.whitelist=srvr,mntr",
                "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                "sessionRequireClientSASLAuth=true",
                "",
            ]
        )
    )
    log = open(root / "zookeeper.out", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            check_java(),
            "-Xmx128m",
            f"-Djava.security.auth.login.config={root / 'jaas.conf'}",
            "-cp",
            launcher.classpath(),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(root / "zoo.cfg"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    log.close()
    try:
        deadline = time.monotonic() + 60
        while not zookeeper_serving(SASL_PORT):
            assert proc.poll() is None, (root / "zookeeper.out").read_text()[-2000:]
            assert time.monotonic() < deadline, "the SASL ZooKeeper did not start within 60 s"
            time.sleep(0.3)
        yield f"127.0.0.1:{SASL_PORT}"
    finally:
        close_clients()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _configure(monkeypatch: pytest.MonkeyPatch, address: str, auth: str) -> None:
    from console.config.clusters import reset_for_tests

    monkeypatch.setenv("ZOOKEEPER_CONNECT", address)
    monkeypatch.setenv("ZOOKEEPER_AUTH", auth)
    reset_for_tests()
    close_clients()


def test_a_sasl_session_browses_and_reads_a_znode_only_the_sasl_user_may_read(
    sasl_zookeeper: str, clusters_reset: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    own = KazooClient(
        hosts=sasl_zookeeper, sasl_options={"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD}
    )
    own.start(timeout=20)
    locked = f"/sasl-only-{time.monotonic_ns()}"
    try:
        own.create(locked, b"for kazami's eyes", acl=[ACL(Permissions.ALL, Id("sasl", USER))])
        _configure(monkeypatch, sasl_zookeeper, f"sasl:{USER}:{PASSWORD}")
        caplog.set_level(1, logger="kazoo")
        viewer = logged_in("viewer", "zk-sasl-viewer")
        root = viewer.get(API, {"path": "/"})
        assert root.status_code == 200, root.content
        assert locked.lstrip("/") in root.json()["children"]
        body = viewer.get(API, {"path": locked}).json()
        assert body["data"] == "for kazami's eyes"
        assert [(a["scheme"], a["id"]) for a in body["acl"]] == [("sasl", USER)]
        assert PASSWORD not in caplog.text
        assert PASSWORD not in repr(get_configs()["local"])
    finally:
        own.delete(locked)
        own.stop()
        own.close()


def test_wrong_sasl_credentials_are_refused_with_a_clear_message(
    sasl_zookeeper: str, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _configure(monkeypatch, sasl_zookeeper, f"sasl:{USER}:not-the-password")
    viewer = logged_in("viewer", "zk-sasl-viewer")
    started = time.monotonic()
    refused = viewer.get(API, {"path": "/"})
    assert time.monotonic() - started < 15
    assert refused.status_code in (401, 503), refused.content
    message = refused.json()["message"]
    assert "refused the credentials" in message or "does not answer" in message
    assert "not-the-password" not in message
    # The Kafka pages do not depend on it.
    assert viewer.get("/api/clusters/local/").status_code == 200


def test_the_sasl_setting_is_checked_before_use() -> None:
    from broker.client.config import ClusterConfig, check_cluster_config
    from broker.errors import ConfigError

    with pytest.raises(ConfigError, match="sasl:user:password") as refused:
        check_cluster_config(ClusterConfig("x", ("127.0.0.1:1",), zookeeper_auth="sasl:only-a-user"))
    assert "only-a-user" not in str(refused.value)
    ok = ClusterConfig("x", ("127.0.0.1:1",), zookeeper_auth=f"sasl:{USER}:{PASSWORD}")
    assert ok.zookeeper_auth_data() == []
    assert ok.zookeeper_sasl_options() == {"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD}
    assert PASSWORD in ok.secrets
