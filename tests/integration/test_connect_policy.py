"""The console's Connect policy against the real worker of the session's cluster: an operator's FileStreamSource
on the console's own files, and connectors aimed at a loopback port, are refused before anything reaches the
worker, with the key and the reason, and audited; the same configs from an admin go through (and a file
source works: its lines arrive); a config update and a validation are held to the same rules; and the
worker itself refuses a connector that overrides its client configs (connector.client.config.override.policy
=None)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from broker.local import connect as local_connect
from broker.messages.masking import parse_rules
from console.config import connect
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, CLUSTER_DATA, CONNECT_PORT, TEST_VAR, logged_in
from tests.integration.connect_files import worker_folder
from tests.integration.kafka_helpers import create_topic, unique, until
from tests.integration.test_connect import (
    API,
    FILE_SOURCE,
    _connectors,
    _worker,
    append,
    create,
    record_count,
    values,
)

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def tmp_path() -> Path:
    """The files this module hands the worker live where its user can reach them (connect_files.py)."""
    return worker_folder()


MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


@pytest.fixture
def admin(connect_worker: str) -> Iterator[Client]:
    connect.reset_for_tests()
    client = logged_in("admin")
    made: list[str] = []
    client.made = made  # type: ignore[attr-defined]
    yield client
    for name in made:
        _worker("DELETE", f"/connectors/{name}")


@pytest.fixture
def operator(connect_worker: str) -> Client:
    connect.reset_for_tests()
    return logged_in("operator")


def _post(client: Client, name: str, config: dict[str, Any]) -> Any:
    return client.post(API, {"connect": "local", "name": name, "config": config}, content_type="application/json")


def _refusal(answer: Any, key: str) -> str:
    assert answer.status_code == 403, answer.content
    body = answer.json()
    assert body["error"] == "connect_policy"
    assert f"Connect policy: {key}:" in body["message"]
    return str(body["message"])


def _audited(action: str, target: str) -> AuditEntry:
    entry = AuditEntry.objects.filter(action=action, target=target).order_by("-id").first()
    assert entry is not None, f"no audit entry for {action} {target}"
    return entry


def test_an_operators_file_source_on_the_consoles_password_is_refused_and_audited(operator: Client) -> None:
    name = unique("steal-password")
    secret = Path(settings.VAR_DIR) / "admin-password"
    config = {"connector.class": FILE_SOURCE, "file": str(secret), "topic": unique("loot")}

    message = _refusal(_post(operator, name, config), "connector.class")
    assert "FileStream" in message
    assert "Only an admin" in message
    assert name not in _connectors()  # nothing reached the worker
    entry = _audited("connect.create", f"local/{name}")
    assert entry.outcome == "refused"
    assert "Connect policy" in entry.result
    assert entry.params["config"]["file"] == str(secret)

    # Under an alias, and through the create page's JSON form: the same refusal, drawn on the page.
    alias = {**config, "connector.class": "FileStreamSource"}
    page = operator.post(
        "/clusters/local/connectors-new/",
        {"connect": "local", "mode": "json", "json": json.dumps({"name": name, "config": alias})},
    )
    assert page.status_code == 403
    assert b"Refused by the console&#x27;s Connect policy: connector.class" in page.content
    assert name not in _connectors()
    assert AuditEntry.objects.filter(action="connect.create", target=f"local/{name}", outcome="refused").count() == 2

    # The create page marks the FileStream plugins as an admin's only, for an operator.
    form = operator.get("/clusters/local/connectors-new/").content.decode()
    assert f'<option value="{FILE_SOURCE}" data-admin-only="true">' in form
    assert f'<option value="{MIRROR}">' in form


def test_an_operators_connector_aimed_at_a_loopback_port_is_refused_but_the_clusters_own_servers_pass(
    operator: Client, admin: Client
) -> None:
    name = unique("ssrf")
    # The worker's own REST API, on this machine: refused whatever the key's name.
    config = {
        "connector.class": MIRROR,
        "source.cluster.alias": "src",
        "source.cluster.bootstrap.servers": f"127.0.0.1:{CONNECT_PORT}",
        "target.cluster.bootstrap.servers": BOOTSTRAP,
        "topics": "nothing-matches-this",
    }
    message = _refusal(_post(operator, name, config), "source.cluster.bootstrap.servers")
    assert f"127.0.0.1:{CONNECT_PORT}" in message
    assert "loopback" in message
    assert name not in _connectors()
    assert _audited("connect.create", f"local/{name}").outcome == "refused"

    localhost = {**config, "source.cluster.bootstrap.servers": "localhost:9"}
    assert "localhost:9" in _refusal(_post(operator, name, localhost), "source.cluster.bootstrap.servers")

    # A validation is held to the same rules, refused before the worker loads anything, and audited.
    answer = operator.put(
        "/api/clusters/local/connect-validate/local/", {"config": config}, content_type="application/json"
    )
    _refusal(answer, "source.cluster.bootstrap.servers")
    assert _audited("connect.validate", f"local/{MIRROR}").outcome == "refused"

    # The cluster's own bootstrap servers are what MirrorMaker legitimately names: created.
    own = {**config, "source.cluster.bootstrap.servers": BOOTSTRAP}
    admin.made.append(name)  # type: ignore[attr-defined]
    created = _post(operator, name, own)
    assert created.status_code == 201, created.content
    assert until("the connector on the worker", lambda: name in _connectors(), timeout=30)

    # An update pointing it elsewhere is refused, and the worker keeps the config it had.
    edit = operator.put(
        f"{API}local/{name}/config/",
        {"config": {**own, "target.cluster.bootstrap.servers": "127.0.0.1:1"}},
        content_type="application/json",
    )
    _refusal(edit, "target.cluster.bootstrap.servers")
    assert _audited("connect.config", f"local/{name}").outcome == "refused"
    kept = until("the worker's config", lambda: _worker("GET", f"/connectors/{name}/config"), timeout=20)
    assert kept["target.cluster.bootstrap.servers"] == BOOTSTRAP


def test_an_admins_file_source_is_allowed_and_its_lines_arrive(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-admin-lines"), partitions=1)
    name = unique("admin-file")
    source = tmp_path / "lines.txt"
    append(source, "one", "two")
    answer = create(admin, name, {"connector.class": FILE_SOURCE, "file": str(source), "topic": topic})
    assert answer.status_code == 201, answer.content
    until("the two lines in the topic", lambda: record_count(topic) == 2)
    assert values(topic) == ["one", "two"]
    assert _audited("connect.create", f"local/{name}").outcome == "done"


def test_the_worker_refuses_a_connector_that_overrides_its_client_configs(admin: Client, tmp_path: Path) -> None:
    name = unique("override")
    config = {
        "connector.class": FILE_SOURCE,
        "file": str(tmp_path / "in.txt"),
        "topic": unique("override-topic"),
        "producer.override.bootstrap.servers": BOOTSTRAP,
    }
    answer = create(admin, name, config)
    assert answer.status_code == 400, answer.content
    fields = answer.json()["fields"]
    assert "producer.override.bootstrap.servers" in fields
    reasons = " ".join(fields["producer.override.bootstrap.servers"])
    assert "'None' policy does not allow" in reasons, reasons
    assert name not in _connectors()


def test_the_worker_runs_as_a_user_who_cannot_read_the_consoles_secrets(admin: Client) -> None:
    found = local_connect.status(CLUSTER_DATA)
    assert found is not None
    if found["user"] != "nobody":
        # Not root, or nobody cannot reach this checkout's folders: the launcher says why.
        assert found["user_note"], found
        pytest.skip(f"the worker runs as {found['user']}: {found['user_note']}")
    # A file only its owner may read, as var/admin-password and var/secret_key are (0600): even an admin's
    # FileStreamSource, which the policy lets through, fails on it and nothing reaches the topic.
    secret = TEST_VAR / "connect-secret.txt"
    secret.write_text("the console's secret\n")
    secret.chmod(0o600)
    topic = create_topic(unique("connect-loot"), partitions=1)
    name = unique("admin-steal")
    answer = create(admin, name, {"connector.class": FILE_SOURCE, "file": str(secret), "topic": topic})
    assert answer.status_code == 201, answer.content

    def task_failed() -> Any:
        found = admin.get(f"{API}local/{name}/status/").json()
        return found if found.get("tasks") and found["tasks"][0]["state"] == "FAILED" else None

    failed = until("the task failed on the file", task_failed)
    assert "AccessDenied" in failed["tasks"][0]["trace"] or "Permission denied" in failed["tasks"][0]["trace"]
    assert record_count(topic) == 0


def test_an_operator_may_not_mirror_a_topic_masked_for_operators_into_an_unmasked_one(
    operator: Client, admin: Client, settings: Any
) -> None:
    secret = create_topic(unique("connect-masked"), partitions=1)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"topics": secret, "paths": ["$.pin"], "level": "admin"}]))
    name = unique("mirror-masked")
    config = {
        "connector.class": MIRROR,
        "source.cluster.alias": "copy",
        "source.cluster.bootstrap.servers": BOOTSTRAP,
        "target.cluster.bootstrap.servers": BOOTSTRAP,
        "topics": "connect-masked.*",
    }
    message = _refusal(_post(operator, name, config), "topics")
    assert repr(secret) in message
    assert "masked for your role" in message
    assert name not in _connectors()
    assert _audited("connect.create", f"local/{name}").outcome == "refused"
    # For an admin, who sees the topic unmasked anyway, the same config is no leak: it is only held to the
    # worker's own checks.
    admin.made.append(name)  # type: ignore[attr-defined]
    assert _post(admin, name, config).status_code == 201
