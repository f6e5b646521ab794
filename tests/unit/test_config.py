from __future__ import annotations

from pathlib import Path

import pytest

from broker.client.config import ClusterConfig, split_servers
from broker.errors import ConfigError
from broker.local import certs
from console.config import clusters
from console.config.env import env_bool, env_float, env_int


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
        ({"max_age": -1}, "max_age must not be negative"),
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
    monkeypatch.setenv("KAZAMI_MAX_AGE", "2.5")
    configs = clusters.load_configs()
    assert list(configs) == ["local", "prod"]
    assert configs["prod"].sasl_password == "from-env"
    assert configs["prod"].read_only is True
    assert configs["local"].max_age == configs["prod"].max_age == 2.5  # the file's clusters default to it

    file.write_text(file.read_text() + "max_age = 0\n")
    assert clusters.load_configs()["prod"].max_age == 0

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


def _tls_env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SSL")
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_the_key_password_is_a_secret_passed_to_kafka_python() -> None:
    config = ClusterConfig("sec", ("h:1",), security_protocol="SSL", ssl_password="k3y-pw")
    assert "k3y-pw" not in repr(config)
    assert config.client_options()["ssl_password"] == "k3y-pw"
    assert config.secrets == ("k3y-pw",)


def test_a_missing_tls_file_is_refused_at_start_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tls_env(monkeypatch, KAFKA_SSL_CAFILE=str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigError, match=r"KAFKA_SSL_CAFILE names .*nope\.pem, which is not a file"):
        clusters.load_configs()


def test_a_key_pasted_instead_of_a_path_is_never_echoed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = certs.generate_certs(tmp_path)
    pasted = files.client_key.read_text()
    _tls_env(monkeypatch, KAFKA_SSL_CERTFILE=str(files.client_cert), KAFKA_SSL_KEYFILE=pasted)
    with pytest.raises(ConfigError, match="KAFKA_SSL_KEYFILE") as refused:
        clusters.load_configs()
    assert "PRIVATE KEY" not in str(refused.value)
    assert pasted.splitlines()[1] not in str(refused.value)


def test_an_encrypted_key_needs_its_password_and_never_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = certs.generate_certs(tmp_path)
    locked = certs.encrypt_key(files.client_key, tmp_path / "locked.pem", "open-sesame")
    _tls_env(monkeypatch, KAFKA_SSL_CAFILE=str(files.ca), KAFKA_SSL_CERTFILE=str(files.client_cert))
    monkeypatch.setenv("KAFKA_SSL_KEYFILE", str(locked))
    with pytest.raises(ConfigError, match=r"is encrypted; give its password \(KAFKA_SSL_KEY_PASSWORD\)"):
        clusters.load_configs()
    monkeypatch.setenv("KAFKA_SSL_KEY_PASSWORD", "not-it")
    with pytest.raises(ConfigError, match="KAFKA_SSL_KEY_PASSWORD does not open the key in KAFKA_SSL_KEYFILE") as bad:
        clusters.load_configs()
    assert "not-it" not in str(bad.value)
    monkeypatch.setenv("KAFKA_SSL_KEY_PASSWORD", "open-sesame")
    assert clusters.load_configs()["local"].ssl_password == "open-sesame"


def test_a_key_that_is_not_the_certificates_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, other = certs.generate_certs(tmp_path / "a"), certs.generate_certs(tmp_path / "b")
    _tls_env(monkeypatch, KAFKA_SSL_CERTFILE=str(mine.client_cert), KAFKA_SSL_KEYFILE=str(other.client_key))
    with pytest.raises(ConfigError, match="not a PEM certificate with its matching private key"):
        clusters.load_configs()


def test_a_toml_cluster_names_its_own_keys_in_tls_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        '[clusters.tls]\nbootstrap_servers = ["h:9093"]\nsecurity_protocol = "SSL"\n'
        f'ssl_cafile = "{tmp_path / "gone.pem"}"\n'
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    with pytest.raises(ConfigError, match=r"ssl_cafile of \[clusters.tls\] names"):
        clusters.load_configs()
    file.write_text('[clusters.tls]\nbootstrap_servers = ["h:9093"]\nssl_key_password_env = "TLS_KEY_PW"\n')
    with pytest.raises(ConfigError, match=r"TLS_KEY_PW \(ssl_key_password_env\) is not set"):
        clusters.load_configs()


def test_generated_certificates_name_localhost_and_keep_keys_private(tmp_path: Path) -> None:
    from cryptography import x509

    files = certs.generate_certs(tmp_path)
    broker = x509.load_pem_x509_certificates(files.broker.read_bytes())[0]
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert files.broker.stat().st_mode & 0o777 == 0o600
    assert files.client_key.stat().st_mode & 0o777 == 0o600
    assert certs.ensure_certs(tmp_path).ca.read_bytes() == files.ca.read_bytes()  # kept, not regenerated


def test_log_dirs_default_to_the_projects_var_folder() -> None:
    """Unset, KAZAMI_LOG_DIRS is the folder the embedded clusters keep their log dirs in: var/ beside manage.py,
    wherever the module that computes it sits in the tree."""
    repo = Path(__file__).resolve().parents[2]
    assert (repo / "manage.py").exists()
    assert clusters._log_dir_roots(None) == (str(repo / "var"),)
    assert clusters._log_dir_roots(" /a , /b ") == ("/a", "/b")


def test_analytics_jobs_are_started_from_the_folder_of_manage_py() -> None:
    from console.background import jobs

    assert (jobs.REPO / "manage.py").exists()


def test_the_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """It holds password hashes and sessions; the embedded Connect worker runs as another user."""
    from console import settings

    fresh = tmp_path / "new.sqlite3"
    assert settings._database(f"sqlite://{fresh}")["NAME"] == fresh
    assert fresh.stat().st_mode & 0o777 == 0o600
    old = tmp_path / "old.sqlite3"
    old.write_bytes(b"")
    old.chmod(0o644)
    (tmp_path / "old.sqlite3-wal").write_bytes(b"")
    (tmp_path / "old.sqlite3-wal").chmod(0o644)
    settings._database(f"sqlite://{old}")
    assert old.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "old.sqlite3-wal").stat().st_mode & 0o777 == 0o600
