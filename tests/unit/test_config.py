from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ClusterConfig, split_servers
from broker.errors import ConfigError
from console import clusters
from console.env import env_bool, env_float, env_int


def test_it_splits_bootstrap_servers_and_drops_blanks() -> None:
    assert split_servers(" a:1, b:2 ,,") == ("a:1", "b:2")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad Name"}, "cluster name"),
        ({"bootstrap_servers": ()}, "empty"),
        ({"bootstrap_servers": ("nohost",)}, "is not host:port"),
        ({"security_protocol": "TLS"}, "security protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "SASL mechanism"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u"}, "username and a password"),
        ({"timeout": 0}, "time-out"),
    ],
)
def test_it_refuses_a_bad_cluster_config_naming_the_field(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"name": "c1", "bootstrap_servers": ("h:1",)}
    base.update(kwargs)
    with pytest.raises(ConfigError, match=message):
        ClusterConfig(**base)


def test_it_never_shows_the_sasl_password_in_repr() -> None:
    config = ClusterConfig(
        "sec",
        ("h:1",),
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="alice",
        sasl_password="s3cr3t-pw",
    )
    assert "s3cr3t-pw" not in repr(config)
    opts = config.client_options()
    assert opts["sasl_plain_password"] == "s3cr3t-pw"
    assert opts["sasl_mechanism"] == "SCRAM-SHA-512"
    assert opts["ssl_check_hostname"] is True


def test_plaintext_options_carry_no_tls_or_sasl_settings() -> None:
    opts = ClusterConfig("p", ("h:1", "h:2"), timeout=1.5).client_options()
    assert opts == {"bootstrap_servers": ["h:1", "h:2"], "security_protocol": "PLAINTEXT", "request_timeout_ms": 1500}


def test_env_readers_refuse_bad_values_with_the_variable_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_BOOL", "maybe")
    monkeypatch.setenv("X_INT", "3.5")
    monkeypatch.setenv("X_FLOAT", "-1")
    with pytest.raises(ConfigError, match="X_BOOL"):
        env_bool("X_BOOL", False)
    with pytest.raises(ConfigError, match="X_INT"):
        env_int("X_INT", 1)
    with pytest.raises(ConfigError, match="X_FLOAT"):
        env_float("X_FLOAT", 1.0, minimum=0.1)
    monkeypatch.setenv("X_BOOL", "Yes")
    assert env_bool("X_BOOL", False) is True


def test_the_default_cluster_is_local_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k1:9092,k2:9092")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "sasl_plaintext")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "bob")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "pw")
    config = clusters.default_cluster_from_env()
    assert config.name == "local"
    assert config.bootstrap_servers == ("k1:9092", "k2:9092")
    assert config.security_protocol == "SASL_PLAINTEXT"


def test_more_clusters_come_from_a_toml_file_with_passwords_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        '[clusters.prod]\nbootstrap_servers = ["p1:9093", "p2:9093"]\nsecurity_protocol = "SASL_SSL"\n'
        'sasl_mechanism = "SCRAM-SHA-256"\nsasl_username = "console"\nsasl_password_env = "PROD_PW"\n'
        "read_only = true\n"
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    monkeypatch.setenv("PROD_PW", "from-env")
    configs = clusters.load_configs()
    assert list(configs) == ["local", "prod"]
    assert configs["prod"].sasl_password == "from-env"
    assert configs["prod"].read_only is True

    monkeypatch.delenv("PROD_PW")
    with pytest.raises(ConfigError, match="PROD_PW"):
        clusters.load_configs()


def test_a_malformed_clusters_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text("[clusters.x\n")
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    with pytest.raises(ConfigError, match="not valid TOML"):
        clusters.load_configs()
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=r"missing\.toml"):
        clusters.load_configs()
