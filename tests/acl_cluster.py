"""A cluster with a SASL_SSL listener and Kafka's standard authorizer for the ACL and SCRAM tests (integration
and browser), started once per session when a test asks for it: ZooKeeper mode (AclAuthorizer) on the default
run, Kafka 4 in KRaft mode (StandardAuthorizer) with KAZAMI_TEST_CLUSTER=kraft. One broker, on ports of this
slot's own (away from the session cluster and from test_sasl_ssl's), so it runs beside both."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.local import launcher
from tests.conftest import KRAFT, KRAFT_KAFKA_VERSION, SLOT, TEST_VAR

DATA = TEST_VAR / ("acl-cluster-kraft" if KRAFT else "acl-cluster")
ZOOKEEPER_PORT = 12186 + 10 * SLOT
BASE_PORT = 19097 + 10 * SLOT
OFFSET = 200
SECURE_PORT = BASE_PORT + OFFSET
PASSWORD_ENV = "KAZAMI_ACL_TEST_PASSWORD"
NAME = "secure"


@dataclass(frozen=True)
class AclCluster:
    layout: launcher.ClusterLayout
    listener: launcher.SecureListener

    @property
    def plaintext(self) -> str:
        return f"127.0.0.1:{BASE_PORT}"

    @property
    def admin_password(self) -> str:
        """The password of the console's own user (kazami-scram, allowed everything by ACLs set at ``up``)."""
        return self.listener.user_for("SCRAM-SHA-512").password

    def clusters_toml(self, timeout: float = 5.0) -> str:
        """A clusters file naming this cluster ``secure``: the SASL_SSL listener as the console's user, its
        password from PASSWORD_ENV."""
        user = self.listener.user_for("SCRAM-SHA-512")
        return (
            f"[clusters.{NAME}]\n"
            f'bootstrap_servers = ["127.0.0.1:{SECURE_PORT}"]\n'
            'security_protocol = "SASL_SSL"\n'
            'sasl_mechanism = "SCRAM-SHA-512"\n'
            f'sasl_username = "{user.name}"\n'
            f'sasl_password_env = "{PASSWORD_ENV}"\n'
            f'ssl_cafile = "{self.listener.ca}"\n'
            f'ssl_certfile = "{self.listener.client_cert}"\n'
            f'ssl_keyfile = "{self.listener.client_key}"\n'
            f"timeout = {timeout}\n"
        )

    def write_clusters_file(self, folder: Path) -> Path:
        path = folder / "acl-clusters.toml"
        path.write_text(self.clusters_toml())
        return path

    def client_options(self, username: str, password: str) -> dict[str, object]:
        """kafka-python options of a client of the SASL_SSL listener as ``username`` (SCRAM-SHA-512)."""
        config = self.listener.client_config("SCRAM-SHA-512", sasl_username=username, sasl_password=password)
        return dict(config.client_options())


@pytest.fixture(scope="session")
def acl_cluster() -> Iterator[AclCluster]:
    launcher.down(DATA, echo=lambda _: None)
    shutil.rmtree(DATA, ignore_errors=True)
    options: dict[str, object] = (
        {"kraft": True, "kafka_version": KRAFT_KAFKA_VERSION} if KRAFT else {"zookeeper_port": ZOOKEEPER_PORT}
    )
    layout = launcher.up(
        DATA, brokers=1, base_port=BASE_PORT, sasl_ssl_port_offset=OFFSET, echo=lambda _: None, **options
    )
    try:
        yield AclCluster(layout, launcher.secure_listener(layout))
    finally:
        launcher.down(DATA, echo=lambda _: None)
