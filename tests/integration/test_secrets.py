"""Secrets stay hidden through the real console (one rule: broker/redaction.py): a connector config with every
secret shape on the connector's page, its JSON API and the audit entry of its creation; a change to a sensitive
broker config in the audit log, whether Kafka or the console refused it or not; a SCRAM user's znode refused
to viewers and operators in the ZooKeeper browser (page, tree and API) and shown to admins with its salted
password hidden."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from broker.local import launcher
from broker.security.scram import do_delete_user, do_set_password
from broker.zk.client import close_clients, get_node
from console.config import connect
from console.config.clusters import get_connection
from console.models import AuditEntry
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, unique, until

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db,
    pytest.mark.zookeeper("hiding secrets does not depend on the cluster's mode: run once"),
]

CONNECTORS = "/api/clusters/local/connectors/"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule"
ZK_API = "/api/clusters/local/zookeeper/"
ZK_PAGE = "/clusters/local/zookeeper/"


def audit_text(**filters: Any) -> str:
    """Everything the audit log keeps of the entries matching ``filters``, as one text."""
    rows = list(AuditEntry.objects.filter(**filters).values("target", "params", "result", "outcome"))
    assert rows, filters
    return json.dumps(rows)


# ---------------------------------------------------------------- connectors


def _shown(client: Client, url: str) -> str | None:
    """The text ``url`` answers, None until it answers 200 (the worker may still be rebalancing)."""
    answer = client.get(url)
    return answer.content.decode() if answer.status_code == 200 else None


@pytest.fixture
def connect_admin(connect_worker: str) -> Iterator[Client]:
    connect.reset_for_tests()
    client = logged_in("admin")
    made: list[str] = []
    client.made = made  # type: ignore[attr-defined]
    yield client
    for name in made:
        client.delete(f"{CONNECTORS}local/{name}/")


def test_every_secret_shape_of_a_connector_config_is_hidden_on_its_page_api_and_audit(
    connect_admin: Client, tmp_path: Path
) -> None:
    topic = create_topic(unique("secret-shapes"), partitions=1)
    name = unique("secret-shapes")
    secrets = {
        # a secret name: the value whole
        "db.pwd": "pwd-value-1",
        "ssh.key.passphrase": "phrase-value-2",
        "ssl.keystore.key": "keystore-key-3",
        "consumer.override.sasl.jaas.config": f'{JAAS} required username="u" password="jaas-4";',
        # secrets inside other values: the secret part only
        "connection.url": "https://app:url-pass-5@db.example:8443/x",
        "http.headers": "Authorization: Bearer bearer-token-6|Accept: application/json",
        "extra.settings": '{"user": "app", "password": "json-pass-7", "region": "eu"}',
    }
    config = {"connector.class": FILE_SOURCE, "file": str(tmp_path / "in.txt"), "topic": topic, **secrets}
    connect_admin.made.append(name)  # type: ignore[attr-defined]
    created = connect_admin.post(
        CONNECTORS, {"connect": "local", "name": name, "config": config}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    hidden = ["pwd-value-1", "phrase-value-2", "keystore-key-3", "jaas-4", "url-pass-5", "bearer-token-6"]
    hidden.append("json-pass-7")

    for url in (
        f"{CONNECTORS}local/{name}/",
        f"{CONNECTORS}local/{name}/config/",
        f"/clusters/local/connectors/local/{name}/",
    ):
        text = until(url, functools.partial(_shown, connect_admin, url))
        for secret in hidden:
            assert secret not in text, (url, secret)
    shown = connect_admin.get(f"{CONNECTORS}local/{name}/config/").json()["config"]
    # What is not secret stays readable.
    assert shown["connection.url"] == "https://app:********@db.example:8443/x"
    assert shown["http.headers"] == "Authorization: Bearer ********|Accept: application/json"
    assert json.loads(shown["extra.settings"]) == {"user": "app", "password": "********", "region": "eu"}
    assert shown["db.pwd"] == "********"
    assert shown["topic"] == topic

    audit = audit_text(action="connect.create", target=f"local/{name}")
    for secret in hidden:
        assert secret not in audit, secret
    assert "db.example:8443" in audit  # the entry still says what was created

    # The config sent back as shown keeps the worker's real values.
    edited = connect_admin.put(
        f"{CONNECTORS}local/{name}/config/", {**shown, "tasks.max": "1"}, content_type="application/json"
    )
    assert edited.status_code in (200, 202), edited.content
    on_worker = until(
        "the worker's config",
        lambda: (r := connect_admin.get(f"{CONNECTORS}local/{name}/config/")).status_code == 200 and r.json(),
    )
    assert on_worker["config"]["connection.url"] == shown["connection.url"]
    assert "json-pass-7" not in audit_text(action="connect.config", target=f"local/{name}")


# ---------------------------------------------------------------- broker configs


@pytest.mark.parametrize("config", ["ssl.keystore.key", "ssl.keystore.password", "sasl.jaas.config"])
def test_a_change_to_a_sensitive_broker_config_leaves_no_value_in_the_audit_log(
    kafka_cluster: launcher.ClusterLayout, config: str
) -> None:
    secret = f"Sensitive-{unique('v')}"
    target = "broker 0"
    # A viewer is refused by the console.
    refused = logged_in("viewer").post(
        "/api/clusters/local/brokers/0/configs/", {"set": {config: secret}}, content_type="application/json"
    )
    assert refused.status_code == 403
    # An admin gets Kafka's answer: on this cluster (no TLS listener, no password encoder secret) a refusal.
    admin = logged_in("admin")
    answer = admin.post(
        "/api/clusters/local/brokers/0/configs/", {"set": {config: secret}}, content_type="application/json"
    )
    assert answer.status_code in (200, 400, 422), answer.content
    try:
        entries = list(AuditEntry.objects.filter(action="broker.configs", target=target).order_by("id"))
        mine = [e for e in entries if config in (e.params.get("set") or {})]
        assert mine, [e.params for e in entries]
        assert all(e.params["set"][config] == "(hidden)" for e in mine)
        assert "refused" in {e.outcome for e in entries}  # the viewer's attempt is in the log too
        assert secret not in audit_text(action="broker.configs", target=target)
        assert secret not in AuditEntry.objects.filter(action="broker.configs").values_list("result", flat=True)
    finally:
        if answer.status_code == 200:
            admin.post("/api/clusters/local/brokers/0/configs/", {"delete": [config]}, content_type="application/json")


# ---------------------------------------------------------------- ZooKeeper


@pytest.fixture
def scram_user(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Iterator[tuple[str, str]]:
    """A SCRAM user on the session's cluster; yields its name and the znode of its credentials."""
    close_clients()
    name = unique("scram-user")
    conn = get_connection("local")
    do_set_password(conn, name, "a-password-of-the-test", ["SCRAM-SHA-256", "SCRAM-SHA-512"], 4096, create=True)
    yield name, f"/config/users/{name}"
    do_delete_user(get_connection("local"), name)
    close_clients()


@pytest.mark.zookeeper("SCRAM credentials live in ZooKeeper on a ZooKeeper-mode cluster")
def test_a_scram_users_znode_is_for_admins_only_and_hides_the_salted_password(scram_user: tuple[str, str]) -> None:
    name, path = scram_user
    conn = get_connection("local")
    held = until("the user's znode", lambda: get_node(conn, path).data)
    credentials = json.loads(held)["config"]
    parts = [
        part.split("=", 1)[1]
        for value in credentials.values()
        for part in str(value).split(",")
        if part.split("=", 1)[0] in ("salt", "stored_key", "server_key")
    ]
    assert len(parts) == 6, credentials

    for role in ("viewer", "operator"):
        client = logged_in(role)
        api = client.get(ZK_API, {"path": path})
        assert api.status_code == 403, (role, api.content)
        assert api.json()["error"] == "forbidden"
        page = client.get(ZK_PAGE, {"path": path})
        assert page.status_code == 403, role
        tree = client.get(f"{ZK_PAGE}tree/", {"path": path})
        assert tree.status_code == 403, role
        for answer in (api, page, tree):
            body = answer.content.decode()
            assert not any(part in body for part in parts), role
        # The list of users stays readable, as on the Security pages.
        listing = client.get(ZK_API, {"path": "/config/users"})
        assert listing.status_code == 200
        assert name in listing.json()["children"]

    admin = logged_in("admin")
    api = admin.get(ZK_API, {"path": path})
    assert api.status_code == 200, api.content
    for answer in (api, admin.get(ZK_PAGE, {"path": path}), admin.get(ZK_PAGE, {"path": path, "as": "hex"})):
        assert answer.status_code == 200
        body = answer.content.decode()
        assert not any(part in body for part in parts)
    data = json.loads(api.json()["data"])["config"]
    assert data["SCRAM-SHA-256"] == "salt=********,stored_key=********,server_key=********,iterations=4096"
    rows = {row["label"]: row["value"] for row in api.json()["explained"]}
    assert rows["SCRAM-SHA-512"] == "4096 iterations; salt, stored key and server key hidden"
    html = admin.get(ZK_PAGE, {"path": path}).content.decode()
    assert 'id="zk-set-data"' not in html  # not editable from a redacted copy
