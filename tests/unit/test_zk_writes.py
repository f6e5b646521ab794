"""What the ZooKeeper writes check before anything is sent (broker.zk.writes), the ACL entries a read returns
(broker.zk.nodes.ZAcl), and the ZooKeeper settings of a cluster (broker.client.config,
console.config.clusters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kazoo.security import ACL, Id, make_digest_acl, make_digest_acl_credential

from broker.client.config import ClusterConfig
from broker.errors import ConfigError, InvalidInput
from broker.zk.nodes import ZAcl
from broker.zk.writes import (
    MAX_WRITE,
    WARNINGS,
    ZNodeExists,
    ZNodeProtected,
    ZooKeeperWritesOff,
    check_change,
    check_data,
    check_delete,
    check_version,
    check_writes,
    protection,
)
from console.config import clusters


def config(**kwargs: Any) -> ClusterConfig:
    return ClusterConfig("c1", ("h:1",), **kwargs)


# ---------------------------------------------------------------- writes allowed?


def test_writes_are_off_unless_the_cluster_turns_them_on() -> None:
    with pytest.raises(ZooKeeperWritesOff, match="turned off for cluster 'c1': set zookeeper_writes"):
        check_writes(config())
    check_writes(config(zookeeper_writes=True))


def test_a_read_only_cluster_refuses_writes_whatever_zookeeper_writes_says() -> None:
    with pytest.raises(ZooKeeperWritesOff, match="read-only"):
        check_writes(config(zookeeper_writes=True, read_only=True))


# ---------------------------------------------------------------- what may be deleted


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/", "(the root) cannot be deleted"),
        ("/zookeeper", "ZooKeeper's own"),
        ("/zookeeper/quota", "it lies under /zookeeper"),
        ("/brokers/ids", "Stop the broker instead"),
        ("/brokers/ids/0", "ephemeral znode its own session keeps"),
        ("/brokers", "it holds /brokers/ids"),
        ("/brokers/topics/orders/partitions/0/state", "Delete a topic through Kafka"),
        ("/cluster", "it holds /cluster/id"),
        ("/cluster/id", "refuse to start"),
        ("/controller_epoch", "stale controller"),
        ("/latest_producer_id_block", "producer ids"),
        ("/migration", "migration"),
    ],
)
def test_kafkas_registry_nodes_are_protected_from_deletion_saying_why(path: str, says: str) -> None:
    reason = protection(path)
    assert reason is not None
    assert says in reason
    with pytest.raises(ZNodeProtected, match=path):
        check_delete(path)


@pytest.mark.parametrize(
    "path",
    ["/kazami-test", "/brokers/idsx", "/brokers/seqid", "/admin/delete_topics/t", "/config/topics/t", "/clusterx"],
)
def test_other_znodes_may_be_deleted_without_a_warning(path: str) -> None:
    assert protection(path) is None
    assert check_delete(path) is None


def test_deleting_the_controller_is_allowed_with_a_warning_that_it_forces_an_election() -> None:
    assert protection("/controller") is None
    warning = check_delete("/controller")
    assert warning == WARNINGS["/controller"]
    assert "elect a new controller" in warning
    assert "force" in warning


def test_broker_registrations_are_neither_created_nor_changed() -> None:
    with pytest.raises(ZNodeProtected, match="written by the brokers themselves"):
        check_change("/brokers/ids/7", creating=True)
    with pytest.raises(ZNodeProtected, match="cannot be changed"):
        check_change("/brokers/ids/0", creating=False)
    with pytest.raises(ZNodeProtected):
        check_change("/brokers/ids", creating=True)
    check_change("/brokers/ids", creating=False)  # its data is nobody's
    with pytest.raises(ZNodeProtected, match="ZooKeeper's own"):
        check_change("/zookeeper/mine", creating=True)
    with pytest.raises(ZNodeExists):
        check_change("/", creating=True)
    check_change("/kazami/a", creating=True)
    check_change("/controller", creating=False)


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(("given", "version"), [(0, 0), ("3", 3), (" 12 ", 12), (-1, -1), ("-1", -1)])
def test_a_version_is_a_whole_number_or_minus_one(given: object, version: int) -> None:
    assert check_version(given) == version


@pytest.mark.parametrize("given", [None, "", "x", "1.5", -2, True, 2**31, [1]])
def test_a_bad_version_is_refused_saying_what_it_must_be(given: object) -> None:
    with pytest.raises(InvalidInput, match="version must be"):
        check_version(given)


def test_data_beyond_what_zookeeper_takes_is_refused() -> None:
    assert check_data(b"x" * MAX_WRITE) == b"x" * MAX_WRITE
    with pytest.raises(InvalidInput, match="at most about 1 MiB"):
        check_data(b"x" * (MAX_WRITE + 1))


# ---------------------------------------------------------------- ACL entries


def test_an_acl_entry_names_its_permissions_in_zookeepers_order() -> None:
    entry = ZAcl.of(ACL(31, Id("world", "anyone")))
    assert entry.perms == ("create", "delete", "read", "write", "admin")
    assert entry.letters == "cdrwa"
    assert entry.as_dict() == {"scheme": "world", "id": "anyone", "perms": list(entry.perms)}
    digest = ZAcl.of(make_digest_acl("kazami", "pw", read=True, write=True))
    assert digest.scheme == "digest"
    assert digest.id == make_digest_acl_credential("kazami", "pw")  # the user and a hash, no password
    assert digest.letters == "rw"


# ---------------------------------------------------------------- settings


def test_zookeeper_credentials_are_a_secret_kept_out_of_repr_and_named_for_the_logs() -> None:
    c = config(zookeeper_auth="digest:kazami:s3cr3t-zk")
    assert "s3cr3t-zk" not in repr(c)
    assert c.zookeeper_auth_data() == [("digest", "kazami:s3cr3t-zk")]
    assert {"digest:kazami:s3cr3t-zk", "kazami:s3cr3t-zk"} <= set(c.secrets)
    assert config().zookeeper_auth_data() == []


@pytest.mark.parametrize("value", ["digest:", "digest:nopassword", ":x", "Digest:a:b", "digest"])
def test_malformed_zookeeper_credentials_are_refused_without_echoing_them(value: str) -> None:
    with pytest.raises(ConfigError, match="scheme:credential") as caught:
        config(zookeeper_auth=value)
    assert "pw" not in str(caught.value)
    assert "nopassword" not in str(caught.value)


def test_the_default_cluster_reads_zookeeper_writes_and_auth_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZOOKEEPER_WRITES", "1")
    monkeypatch.setenv("ZOOKEEPER_AUTH", "digest:kazami:pw")
    c = clusters.default_cluster_from_env()
    assert c.zookeeper_writes is True
    assert c.zookeeper_auth == "digest:kazami:pw"
    monkeypatch.delenv("ZOOKEEPER_WRITES")
    monkeypatch.setenv("ZOOKEEPER_AUTH", "")
    c = clusters.default_cluster_from_env()
    assert c.zookeeper_writes is False
    assert c.zookeeper_auth is None


def test_a_clusters_file_names_the_variable_holding_the_zookeeper_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        '[clusters.prod]\nbootstrap_servers = ["k:9092"]\nzookeeper_writes = true\n'
        'zookeeper_auth_env = "PROD_ZK_AUTH"\n\n[clusters.other]\nbootstrap_servers = ["k:9092"]\n'
    )
    monkeypatch.setenv("PROD_ZK_AUTH", "digest:kazami:pw")
    prod, other = clusters.clusters_from_file(file, 2.5)
    assert (prod.zookeeper_writes, prod.zookeeper_auth) == (True, "digest:kazami:pw")
    assert (other.zookeeper_writes, other.zookeeper_auth) == (False, None)
    monkeypatch.delenv("PROD_ZK_AUTH")
    with pytest.raises(ConfigError, match="PROD_ZK_AUTH"):
        clusters.clusters_from_file(file, 2.5)
    file.write_text('[clusters.prod]\nbootstrap_servers = ["k:9092"]\nzookeeper_writes = "false"\n')
    with pytest.raises(ConfigError, match="zookeeper_writes must be true or false"):
        clusters.clusters_from_file(file, 2.5)
