"""One rule for secrets (broker/redaction.py), and where it is used without a cluster: connector configs,
the audit log's parameters, ZooKeeper data."""

from __future__ import annotations

import json

import pytest

from broker import redaction
from broker.connect import connectors as connect
from broker.redaction import MASK, is_secret_name, redact_mapping, redact_text, redact_value
from broker.zk import registry
from console.access import HIDDEN, mask

SECRET_NAMES = [
    "password",
    "database.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "listener.name.internal.ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "consumer.override.sasl.jaas.config",
    "db.pwd",
    "dbPwd",
    "passphrase",
    "ssh.key.passphrase",
    "client_secret",
    "aws.secret.access.key",
    "aws.access.key.id",
    "api.key",
    "apiKey",
    "APIKEY",
    "accessKey",
    "token",
    "auth.token",
    "sessionToken",
    "github_token",
    "basic.auth.user.info",
    "private.key.id",
    "headers.Authorization",
    "credentials",
    "password.encoder.secret",
    "delegation.token.secret.key",
    "delegation.token.master.key",
    "salt",
    "stored_key",
    "server_key",
]
# Look-alikes: a word key or token that is not the last one, a type or a location, a bare "key" (the key of a
# produced message, in the audit log).
ORDINARY_NAMES = [
    "key",
    "key.converter",
    "key.converter.schemas.enable",
    "key.ignore",
    "keystore.type",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.truststore.location",
    "tokens.per.second",
    "delegation.token.max.lifetime.ms",
    "sasl.oauthbearer.token.endpoint.url",
    "message.key.columns",
    "topic",
    "tasks.max",
    "connector.class",
    "connection.url",
    "headers",
    "SCRAM-SHA-256",
    "iterations",
    "",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)
    assert redact_value(name, "s3cr3t-value") == MASK
    assert redact_value(name, 12345) == MASK


@pytest.mark.parametrize("name", ORDINARY_NAMES)
def test_look_alikes_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)
    assert redact_value(name, "plain value") == "plain value"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://bob:hunter2@example.com:8443/path", f"https://bob:{MASK}@example.com:8443/path"),
        ("mongodb://app:p@ss@h1:27017,h2/db", f"mongodb://app:{MASK}@h1:27017,h2/db"),
        ("see https://:only-pass@h/ and ftp://u:x@f", f"see https://:{MASK}@h/ and ftp://u:{MASK}@f"),
        ("Authorization: Bearer eyJhbGciOi.e30.sig", f"Authorization: Bearer {MASK}"),
        ("authorization=Basic dXNlcjpwYXNz", f"authorization=Basic {MASK}"),
        (
            "Authorization: Bearer abc.def-123|Content-Type: application/json",
            f"Authorization: Bearer {MASK}|Content-Type: application/json",
        ),
        ("curl -H 'Bearer 0123456789abcdef'", f"curl -H 'Bearer {MASK}'"),
        (
            "jdbc:postgresql://db:5432/app?user=app&password=pg-s3cret&ssl=true",
            f"jdbc:postgresql://db:5432/app?user=app&password={MASK}&ssl=true",
        ),
        ("Server=db;Uid=sa;Pwd=Secr3t;", f"Server=db;Uid=sa;Pwd={MASK};"),
        (
            'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";',
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="{MASK}";',
        ),
        (
            '{"user": "app", "password": "x1", "nested": {"api_key": 42, "ok": true}}',
            f'{{"user": "app", "password": "{MASK}", "nested": {{"api_key": "{MASK}", "ok": true}}}}',
        ),
        (
            "salt=MWtx,stored_key=Ux/Y+1=,server_key=Ab+c=,iterations=4096",
            f"salt={MASK},stored_key={MASK},server_key={MASK},iterations=4096",
        ),
    ],
)
def test_secrets_inside_text_are_hidden_and_the_rest_kept(text: str, shown: str) -> None:
    assert redact_text(text) == shown
    assert redact_text(shown) == shown  # hiding twice changes nothing more


@pytest.mark.parametrize(
    "text",
    [
        "Basic authentication is used; send a Bearer token",
        "http://example.com:8080/path?user=app",
        "topic=orders,partitions=3",
        '{"key": "user-7", "tokens": 3, "keystore.type": "PKCS12"}',
        "key=value",
        "",
    ],
)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact_text(text) == text


def test_a_json_valued_setting_keeps_its_layout() -> None:
    value = '{\n  "url": "https://u:pw@h",\n  "password" : "p"\n}'
    shown = redact_value("transforms.x.spec", value)
    assert json.loads(shown) == {"url": f"https://u:{MASK}@h", "password": MASK}
    assert shown.count("\n") == 3


def test_mappings_are_redacted_at_every_depth_with_a_chosen_mask() -> None:
    params = {"set": {"ssl.keystore.key": "-----BEGIN", "num.io.threads": "8"}, "urls": ["http://a:b@h"], "n": 1}
    assert redact_mapping(params, "(x)") == {
        "set": {"ssl.keystore.key": "(x)", "num.io.threads": "8"},
        "urls": ["http://a:(x)@h"],
        "n": 1,
    }
    assert redact_value("anything", None) is None


def test_connector_helpers_follow_the_rule_and_an_edit_keeps_the_real_values() -> None:
    current = {
        "connection.url": "https://app:pw1@db/x",
        "headers": "Authorization: Bearer tok-123456",
        "settings": '{"password": "j1"}',
        "db.pwd": "p2",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    shown = connect.mask_config(current)
    assert shown == {
        "connection.url": f"https://app:{MASK}@db/x",
        "db.pwd": MASK,
        "headers": f"Authorization: Bearer {MASK}",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "settings": f'{{"password": "{MASK}"}}',
    }
    assert connect.MASK == MASK
    assert connect.is_secret_key("ssl.keystore.key")
    assert not connect.is_secret_key("key.converter")
    # Sent back as shown, every value is the worker's again; a changed one is taken as sent.
    assert connect.unmask(shown, current) == current
    changed = connect.unmask({**shown, "connection.url": "https://app:new@db/x"}, current)
    assert changed["connection.url"] == "https://app:new@db/x"


def test_the_audit_log_keeps_no_secret_shape() -> None:
    params = {
        "password": "(set)",
        "set": {"ssl.keystore.key": "KEY", "ssl.truststore.certificates": "CERT", "log.retention.ms": "1"},
        "config": {"connection.url": "jdbc:x://u:pw@h/db?password=p3", "headers": "Authorization: Basic Zm9vOmJhcg=="},
        "key": "user-7",
        "headers": ["trace"],
    }
    kept = mask(params)
    text = json.dumps(kept)
    for secret in ("(set)", "KEY", "CERT", "pw@", "p3", "Zm9vOmJhcg"):
        assert secret not in text, secret
    assert kept["password"] == HIDDEN
    assert kept["set"]["log.retention.ms"] == "1"
    assert kept["key"] == "user-7"
    assert kept["headers"] == ["trace"]


SCRAM = (
    b'{"version":1,"config":{"SCRAM-SHA-256":"salt=MWtxbmY=,stored_key=Ux/Y+1k=,server_key=Ab+cD4=,'
    b'iterations=4096","SCRAM-SHA-512":"salt=c2FsdA==,stored_key=S0s=,server_key=U1M=,iterations=8192",'
    b'"producer_byte_rate":"1024"}}'
)


def test_a_users_znode_holds_credentials_and_its_salted_password_is_hidden() -> None:
    assert registry.holds_credentials("/config/users/alice")
    assert registry.holds_credentials("/config/users/alice/clients/c1")
    assert not registry.holds_credentials("/config/users")
    assert not registry.holds_credentials("/config/topics/alice")
    shown = registry.redact_data("/config/users/alice", SCRAM)
    assert shown is not None
    for part in (b"MWtxbmY=", b"Ux/Y+1k=", b"Ab+cD4=", b"c2FsdA==", b"S0s=", b"U1M="):
        assert part not in shown
    config = json.loads(shown)["config"]
    assert config["SCRAM-SHA-256"] == f"salt={MASK},stored_key={MASK},server_key={MASK},iterations=4096"
    assert config["producer_byte_rate"] == "1024"
    explained = registry.explain("/config/users/alice", SCRAM)
    assert explained is not None
    rows = {r.label: r.value for r in explained.rows}
    assert rows["SCRAM-SHA-512"] == "8192 iterations; salt, stored key and server key hidden"
    assert "c2FsdA" not in json.dumps(explained.as_dict())


def test_other_znodes_are_redacted_by_name_and_ordinary_data_kept_as_is() -> None:
    broker = b'{"version":1,"config":{"ssl.keystore.password":"encrypted:abc","log.cleaner.threads":"2"}}'
    shown = registry.redact_data("/config/brokers/0", broker)
    assert shown is not None
    assert b"encrypted:abc" not in shown
    assert b'"log.cleaner.threads":"2"' in shown
    explained = registry.explain("/config/brokers/0", broker)
    assert explained is not None
    assert {r.label: r.value for r in explained.rows}["ssl.keystore.password"] == MASK
    topic = b'{"version":2,"partitions":{"0":[1,2]}}'
    assert registry.redact_data("/brokers/topics/t", topic) is topic
    binary = b"\xff\xfepassword=x"
    assert registry.redact_data("/x", binary) is binary
    assert registry.redact_data("/x", None) is None


def test_the_mask_is_what_the_connector_pages_showed() -> None:
    assert redaction.MASK == "********"
