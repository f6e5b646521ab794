"""The console's Connect policy (broker/connect/policy.py): which connector classes and which config values
an operator may send to a worker. Name resolution is replaced by a table here (no network)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from broker.connect import policy
from broker.connect.policy import FILE_SINK, FILE_SOURCE, ConnectPolicy, ConnectPolicyRefused
from broker.errors import ConfigError
from broker.local.connect import worker_properties
from broker.local.layout import ClusterLayout
from console.config import clusters
from console.config import connect as connect_settings

MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
JDBC = "io.example.jdbc.JdbcSinkConnector"
PLUGINS = [FILE_SOURCE, FILE_SINK, MIRROR, "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector", JDBC]
OWN = ("127.0.0.1:19092", "127.0.0.1:19093", "Broker-1.example:9092")
DNS = {
    "db.example.com": ["93.184.216.34"],
    "sneaky.example.com": ["10.1.2.3"],
    "twofaced.example.com": ["93.184.216.34", "127.0.0.1"],
    "v6local.example.com": ["fd00::1"],
}


def resolve(host: str, timeout: float) -> Sequence[str]:
    if host == "slow.example.com":
        raise TimeoutError(f"no answer within {timeout:g} s")
    if host not in DNS:
        raise OSError("Name or service not known")
    return DNS[host]


def check(config: dict[str, str], allowed: tuple[str, ...] | None = None) -> None:
    rules = ConnectPolicy(allowed_classes=allowed, own_servers=OWN)
    policy.check_connector_config(config, rules, PLUGINS, resolve)


def refused(config: dict[str, str], allowed: tuple[str, ...] | None = None) -> ConnectPolicyRefused:
    with pytest.raises(ConnectPolicyRefused) as caught:
        check(config, allowed)
    return caught.value


@pytest.mark.parametrize("given", [FILE_SOURCE, "FileStreamSource", "FileStreamSourceConnector", f" {FILE_SINK} "])
def test_the_filestream_classes_are_refused_by_default_under_any_of_their_names(given: str) -> None:
    error = refused({"connector.class": given, "topic": "t"})
    assert error.key == "connector.class"
    assert "FileStream" in str(error)
    assert "Only an admin" in str(error)


def test_other_classes_pass_by_default_and_an_allow_list_takes_only_what_it_names() -> None:
    check({"connector.class": MIRROR})
    check({"connector.class": "MirrorSource"})  # an alias, resolved against the worker's plugins
    assert refused({"connector.class": MIRROR}, allowed=(JDBC,)).key == "connector.class"
    check({"connector.class": "JdbcSink"}, allowed=(JDBC,))
    check({"connector.class": JDBC}, allowed=("JdbcSinkConnector",))
    check({"connector.class": FILE_SOURCE, "topic": "t"}, allowed=("*",))


def test_a_dotted_allow_list_entry_is_not_matched_by_simple_name_alone() -> None:
    # A class of the same simple name from another package is not the one allowed.
    assert not policy.class_allowed("com.other.JdbcSinkConnector", (JDBC,), [*PLUGINS, "com.other.JdbcSinkConnector"])
    # An alias two plugins share stays unresolved and is not allowed by a full name.
    assert policy.resolve_class("JdbcSink", [JDBC, "com.other.JdbcSinkConnector"]) == "JdbcSink"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("file", "/work/main/var/admin-password"),
        ("file", "relative/lines.txt"),
        ("input.file", "x.csv"),
        ("store.path", "/tmp/out"),
        ("logs.dir", "/var/log"),
        ("ssl.keystore.location", "/etc/secrets/ks.jks"),
        ("some.uri", "file:///etc/passwd"),
        ("anything", "FILE:/etc/shadow"),
        ("input.path", "C:\\data"),
    ],
)
def test_values_naming_local_files_are_refused(key: str, value: str) -> None:
    error = refused({"connector.class": MIRROR, key: value}, allowed=("*",))
    assert error.key == key


def test_a_file_key_may_hold_a_remote_url_and_unrelated_keys_are_left_alone() -> None:
    check({"connector.class": MIRROR, "hdfs.path": "https://db.example.com/store", "topics.regex": "a/b.*"})
    check({"connector.class": MIRROR, "profile": "/not/a/file/key", "topics": "orders"})


def test_placeholders_and_commands_are_refused() -> None:
    assert refused({"connector.class": MIRROR, "x": "${file:/work/main/var/secret_key:k}"}).key == "x"
    assert refused({"connector.class": MIRROR, "x": "${env:HOME}"}).key == "x"
    error = refused({"connector.class": MIRROR, "source.cluster.sasl.kerberos.kinit.cmd": "sh -c id"})
    assert error.key == "source.cluster.sasl.kerberos.kinit.cmd"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("target.cluster.bootstrap.servers", "127.0.0.1:19094"),  # a port of this machine the cluster does not list
        ("source.cluster.bootstrap.servers", "localhost:9092"),
        ("connection.url", "jdbc:postgresql://10.0.0.5:5432/app"),
        ("connection.url", "jdbc:mysql://[::1]:3306/db"),
        ("es.host", "192.168.1.10"),
        ("hosts", "db.example.com:1,172.20.0.1:2"),
        ("metadata.url", "http://169.254.169.254/latest/meta-data"),
        ("api.endpoint", "https://sneaky.example.com/x"),
        ("servers", "twofaced.example.com:9092"),
        ("redis.address", "[fd12::3]:6379"),
        ("server", "v6local.example.com"),
        ("bootstrap.servers", "0.0.0.0:9092"),
        ("url", "http://[::ffff:127.0.0.1]:8083/connectors"),
        ("note", "see http://127.0.0.1:18083/connectors"),  # a URL in any value
        ("bootstrap.servers", "slow.example.com:9092"),
        ("bootstrap.servers", "nowhere.invalid:9092"),
    ],
)
def test_loopback_private_link_local_and_unresolvable_hosts_are_refused(key: str, value: str) -> None:
    error = refused({"connector.class": MIRROR, key: value})
    assert error.key == key
    assert "address" in error.why or "resolved" in error.why or "loopback" in error.why


def test_the_clusters_own_bootstrap_servers_and_public_hosts_pass() -> None:
    check(
        {
            "connector.class": MIRROR,
            "source.cluster.bootstrap.servers": "127.0.0.1:19092,127.0.0.1:19093",
            "target.cluster.bootstrap.servers": "broker-1.example:9092",
            "connection.url": "jdbc:postgresql://db.example.com:5432/app",
            "topics": "orders",
        }
    )


def test_the_own_exception_needs_the_port_too() -> None:
    assert refused({"connector.class": MIRROR, "bootstrap.servers": "127.0.0.1"}).key == "bootstrap.servers"


def test_endpoints_are_read_from_lists_urls_and_ipv6() -> None:
    assert policy.endpoints("a:1, b:2;c") == [("a", 1), ("b", 2), ("c", None)]
    assert policy.endpoints("jdbc:postgresql://u:p@H.example:5/db") == [("h.example", 5)]
    assert policy.endpoints("mongodb://h1:1,h2:2/db") == [("h1", 1), ("h2", 2)]
    assert policy.endpoints("[::1]:9092") == [("::1", 9092)]
    assert policy.endpoints("mongodb://h:1,10.0.0.1:2/db", addresses=False) == [("h", 1), ("10.0.0.1", 2)]
    assert policy.endpoints("see http://a.example/x and b:1", addresses=False) == [("a.example", None)]


@pytest.mark.parametrize(
    ("address", "bad"),
    [
        ("127.0.0.53", True),
        ("10.255.0.1", True),
        ("172.31.1.1", True),
        ("172.32.1.1", False),
        ("192.168.0.1", True),
        ("169.254.1.1", True),
        ("0.0.0.0", True),  # noqa: S104 - an address judged, not bound
        ("::1", True),
        ("fc00::1", True),
        ("fe80::1%eth0", True),
        ("::ffff:10.0.0.1", True),
        ("93.184.216.34", False),
        ("2606:2800:220:1::1", False),
    ],
)
def test_forbidden_addresses(address: str, bad: bool) -> None:
    assert policy.forbidden_address(address) is bad


def test_the_message_names_the_key_and_why() -> None:
    error = refused({"connector.class": MIRROR, "source.cluster.bootstrap.servers": "localhost:9092"})
    assert str(error).startswith("Refused by the console's Connect policy: source.cluster.bootstrap.servers:")
    assert "localhost:9092" in str(error)


def test_the_system_resolver_answers_for_localhost_within_its_time_out() -> None:
    assert "127.0.0.1" in policy.system_resolve("localhost", 5.0) or "::1" in policy.system_resolve("localhost", 5.0)


def test_the_embedded_worker_lets_no_connector_override_its_clients(tmp_path: Path) -> None:
    props = worker_properties(ClusterLayout(data=str(tmp_path), brokers=3, base_port=19092), 8083)
    assert "connector.client.config.override.policy=None" in props.splitlines()
    assert "bootstrap.servers=127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094" in props.splitlines()


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    clusters.reset_for_tests()
    connect_settings.reset_for_tests()
    yield
    clusters.reset_for_tests()
    connect_settings.reset_for_tests()


def test_the_settings_give_each_connect_cluster_its_classes_and_the_clusters_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_settings: None
) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        "[clusters.prod]\nbootstrap_servers = ['k1.prod:9092', 'k2.prod:9092']\n"
        "[clusters.prod.connect.main]\nurl = 'http://connect.prod:8083'\n"
        "allowed_classes = ['io.example.jdbc.JdbcSinkConnector', 'MirrorSource']\n"
        "[clusters.prod.connect.spare]\nurl = 'http://spare.prod:8083'\n"
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    monkeypatch.setenv("KAZAMI_CONNECT_ALLOWED_CLASSES", " org.example.A ,, org.example.B ")
    main = connect_settings.connect_policy("prod", "main")
    assert main.allowed_classes == (JDBC, "MirrorSource")
    assert main.own_servers == ("k1.prod:9092", "k2.prod:9092")
    # A Connect cluster whose table names none follows the variable.
    assert connect_settings.connect_policy("prod", "spare").allowed_classes == ("org.example.A", "org.example.B")
    monkeypatch.delenv("KAZAMI_CONNECT_ALLOWED_CLASSES")
    assert connect_settings.connect_policy("prod", "spare").allowed_classes is None


def test_a_malformed_allow_list_stops_the_settings() -> None:
    assert connect_settings.parse_classes("a, b", "X") == ("a", "b")
    assert connect_settings.parse_classes(" , ", "X") is None
    with pytest.raises(ConfigError, match="allowed_classes"):
        connect_settings.parse_classes([1, 2], "X")


TYPES = {FILE_SOURCE: "source", FILE_SINK: "sink", MIRROR: "source", JDBC: "sink"}
TOPICS = ["orders", "payments.cards", "payments.refunds", "clicks"]


def masked(topic: str) -> bool:
    return topic.startswith("payments.")


def check_topics(config: dict[str, str]) -> None:
    rules = ConnectPolicy(own_servers=OWN)
    policy.check_connector_config(config, rules, TYPES, resolve, masked=masked, existing=lambda: TOPICS)


def test_a_sink_may_not_read_a_topic_masked_for_the_sender() -> None:
    check_topics({"connector.class": JDBC, "topics": "orders, clicks"})
    with pytest.raises(ConnectPolicyRefused) as caught:
        check_topics({"connector.class": "JdbcSink", "topics": "orders,payments.cards"})
    assert caught.value.key == "topics"
    assert "payments.cards" in caught.value.why
    with pytest.raises(ConnectPolicyRefused) as caught:
        check_topics({"connector.class": JDBC, "topics.regex": "pay.*"})
    assert caught.value.key == "topics.regex"
    assert "'payments.cards'" in caught.value.why
    check_topics({"connector.class": JDBC, "topics.regex": "ord.*"})


def test_mirrormaker_may_not_copy_masked_topics_of_the_cluster_itself() -> None:
    own = {"connector.class": MIRROR, "source.cluster.bootstrap.servers": "127.0.0.1:19092"}
    with pytest.raises(ConnectPolicyRefused) as caught:
        check_topics(own)  # topics defaults to .*
    assert caught.value.key == "topics"
    check_topics({**own, "topics": "orders,click.*"})
    # From another cluster, its topics are not this cluster's: not checked here.
    check_topics({**own, "source.cluster.bootstrap.servers": "db.example.com:9092"})
    # A source connector that does not read Kafka is not checked either.
    check_topics({"connector.class": "org.example.HttpSource", "topics": "payments.cards"})


def test_without_masking_rules_no_topic_is_checked() -> None:
    rules = ConnectPolicy(own_servers=OWN)
    policy.check_connector_config({"connector.class": JDBC, "topics": "payments.cards"}, rules, TYPES, resolve)
