"""Pure logic of the Connect pages: masking secret-looking values, the create form from a plugin's config
definition, the worker's status and validation answers, the settings of Connect clusters."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from broker.client.config import ConnectConfig
from broker.connect import connectors as connect
from broker.errors import ClusterAuthFailed, ConfigError, InvalidInput, NotFound
from console.config import connect as connect_settings


@pytest.mark.parametrize(
    "key",
    [
        "database.password",
        "consumer.override.sasl.jaas.config",
        "aws.secret.access.key",
        "api.key",
        "basic.auth.user.info",
        "ssl.keystore.key",
        "token",
        "private.key.id",
    ],
)
def test_secret_looking_keys_are_masked(key: str) -> None:
    assert connect.mask_value(key, "s3cr3t") == connect.MASK


@pytest.mark.parametrize("key", ["topic", "file", "tasks.max", "connector.class", "key.converter", "batch.size"])
def test_ordinary_keys_are_shown(key: str) -> None:
    assert connect.mask_value(key, "value") == "value"


def test_a_password_inside_a_value_is_masked_and_the_rest_kept() -> None:
    url = "jdbc:postgresql://db:5432/app?user=app&password=pg-s3cret&ssl=true"
    shown = connect.mask_value("connection.url", url)
    assert "pg-s3cret" not in shown
    assert shown == f"jdbc:postgresql://db:5432/app?user=app&password={connect.MASK}&ssl=true"


def test_an_edit_sending_masked_values_back_keeps_the_workers_secrets() -> None:
    current = {"db.password": "real", "url": "x://h?password=p1", "topic": "a"}
    shown = connect.mask_config(current)
    merged = connect.unmask({**shown, "topic": "b"}, current)
    assert merged == {"db.password": "real", "url": "x://h?password=p1", "topic": "b"}
    # A new secret typed over the mask is taken as typed.
    assert connect.unmask({"db.password": "new"}, current) == {"db.password": "new"}


def test_status_with_a_failed_task_is_parsed() -> None:
    status = {
        "name": "sink",
        "connector": {"state": "RUNNING", "worker_id": "w1:8083"},
        "tasks": [
            {"id": 1, "state": "RUNNING", "worker_id": "w2:8083"},
            {"id": 0, "state": "FAILED", "worker_id": "w1:8083", "trace": "java.io.IOException: boom"},
        ],
        "type": "sink",
    }
    found = connect.parse_status("main", status, {"connector.class": "a.b.FileStreamSink", "x.password": "p"})
    assert [t.id for t in found.tasks] == [0, 1]
    assert (found.running_tasks, found.failed_tasks, found.troubled) == (1, 1, True)
    assert found.short_class == "FileStreamSink"
    assert found.config["x.password"] == connect.MASK
    as_json = found.as_dict()
    assert as_json["tasks"][0] == {
        "id": 0,
        "state": "FAILED",
        "worker": "w1:8083",
        "trace": "java.io.IOException: boom",
    }
    assert as_json["connect"] == "main"
    assert as_json["worker"] == "w1:8083"


def test_an_expanded_list_without_status_yet_is_unassigned() -> None:
    answer = {
        "b": {"info": {"name": "b", "config": {"connector.class": "C"}, "type": "source"}},
        "a": {
            "status": {"name": "a", "connector": {"state": "PAUSED", "worker_id": "w"}, "tasks": [], "type": "sink"},
            "info": {"name": "a", "config": {}, "type": "sink"},
        },
    }
    found = connect.parse_expanded("c", answer)
    assert [(c.name, c.state, c.type) for c in found] == [("a", "PAUSED", "sink"), ("b", "UNASSIGNED", "source")]


def test_the_form_is_built_from_the_plugins_definition() -> None:
    definition = [
        {"name": "batch.size", "type": "INT", "required": False, "default_value": "2000", "importance": "LOW"},
        {"name": "topic", "type": "STRING", "required": True, "default_value": None, "importance": "HIGH"},
        {"name": "connector.class", "type": "STRING", "required": True, "importance": "HIGH"},
        {"name": "file", "type": "STRING", "required": False, "importance": "HIGH", "documentation": "Source file"},
        {"name": "db.password", "type": "PASSWORD", "required": False, "importance": "MEDIUM"},
        {"name": "errors.tolerance.flag", "type": "BOOLEAN", "required": False, "importance": "LOW"},
    ]
    fields = connect.form_fields(definition)
    assert [f.name for f in fields] == [
        "name",
        "tasks.max",
        "topic",
        "file",
        "db.password",
        "batch.size",
        "errors.tolerance.flag",
    ]
    by_name = {f.name: f for f in fields}
    assert by_name["db.password"].input_type == "password"
    assert by_name["batch.size"].input_type == "number"
    assert by_name["batch.size"].default == "2000"
    assert by_name["errors.tolerance.flag"].choices == ["true", "false"]
    assert not by_name["topic"].advanced
    folded = connect.form_fields([{"name": "errors.tolerance", "group": "Error Handling", "importance": "MEDIUM"}])
    assert folded[-1].advanced
    name, config = connect.config_from_form(
        "org.x.FileSource", fields, {"name": "n", "topic": "t", "file": " ", "batch.size": "5"}
    )
    assert name == "n"
    assert config == {"connector.class": "org.x.FileSource", "name": "n", "topic": "t", "batch.size": "5"}


def test_validation_errors_are_collected_per_field() -> None:
    answer = {
        "error_count": 2,
        "configs": [
            {"value": {"name": "name", "errors": []}},
            {"value": {"name": "topic", "errors": ['Missing required configuration "topic"']}},
            {"value": {"name": "tasks.max", "errors": ["Not a number", "Must be non-null"]}},
        ],
    }
    assert connect.validation_errors(answer) == {
        "topic": ['Missing required configuration "topic"'],
        "tasks.max": ["Not a number", "Must be non-null"],
    }


def test_configs_and_names_are_checked_before_the_worker_is_asked() -> None:
    assert connect.check_config({"connector.class": "C", "tasks.max": 2, "flag": True}) == {
        "connector.class": "C",
        "tasks.max": "2",
        "flag": "true",
    }
    with pytest.raises(InvalidInput, match=r"connector\.class"):
        connect.check_config({"topic": "t"})
    with pytest.raises(InvalidInput, match="must be a string"):
        connect.check_config({"connector.class": "C", "nested": {"a": 1}})
    with pytest.raises(InvalidInput):
        connect.check_name("a/b")
    with pytest.raises(InvalidInput):
        connect.parse_offsets({"offsets": [{"offset": {"position": 1}}]})
    assert connect.parse_offsets({"offsets": [{"partition": {"f": "x"}, "offset": None}]})


def test_connect_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_CONNECT_URLS", "main=http://c1:8083/, http://c2:8083")
    monkeypatch.setenv("KAFKA_CONNECT_USERNAME", "kazami")
    monkeypatch.setenv("KAFKA_CONNECT_PASSWORD", "pw-123")
    found = connect_settings.from_env(4.0)
    assert list(found) == ["main", "connect"]
    assert found["main"].url == "http://c1:8083"
    assert found["main"].username == "kazami"
    assert found["main"].timeout == 4.0
    assert "pw-123" not in repr(found["main"])
    assert found["main"].secrets == ("pw-123",)


def test_connect_settings_from_the_clusters_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        "[clusters.prod]\nbootstrap_servers = ['k:9092']\n"
        "[clusters.prod.connect.main]\nurl = 'https://connect.prod:8083'\nusername = 'kz'\n"
        "password_env = 'PROD_CONNECT_PW'\nssl_verify = false\ntimeout = 2\n"
    )
    monkeypatch.setenv("PROD_CONNECT_PW", "pw")
    found = connect_settings.from_file(file, 5.0)
    main = found["prod"]["main"]
    assert (main.url, main.username, main.password, main.ssl_verify, main.timeout) == (
        "https://connect.prod:8083",
        "kz",
        "pw",
        False,
        2.0,
    )
    monkeypatch.delenv("PROD_CONNECT_PW")
    with pytest.raises(ConfigError, match="PROD_CONNECT_PW"):
        connect_settings.from_file(file, 5.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "ftp://x"}, "not http"),
        ({"url": "http://user:pw@host:8083"}, "not http"),
        ({"username": "u"}, "both"),
        ({"timeout": 0}, "positive"),
        ({"name": "bad name"}, "name"),
    ],
)
def test_bad_connect_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"name": "c", "url": "http://h:8083"}
    with pytest.raises(ConfigError, match=message) as caught:
        ConnectConfig(**{**base, **kwargs})
    assert "user:pw" not in str(caught.value)


class _FakeWorker(BaseHTTPRequestHandler):
    """A stand-in for a worker's REST API that checks basic auth and answers with canned errors."""

    seen: ClassVar[list[str | None]] = []
    rebalancing: ClassVar[list[int]] = [0]
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        expected = "Basic " + base64.b64encode(b"kazami:right-pw").decode()
        if self.headers.get("Authorization") != expected:
            self._answer(401, {"error_code": 401, "message": "bad credentials for kazami:wrong-pw"})
        elif self.path.startswith("/connectors/busy") and self.rebalancing[0] > 0:
            self.rebalancing[0] -= 1
            self._answer(
                409, {"error_code": 409, "message": "Request cannot be completed because a rebalance is expected"}
            )
        elif self.path.startswith("/connectors?"):
            self.paths.append(self.path)
            status = {"connector": {"state": "RUNNING", "worker_id": "w"}, "tasks": [], "type": "source"}
            self._answer(200, {n: {"status": {**status, "name": n}, "info": {"config": {}}} for n in "abc"})
        elif self.path.startswith("/connectors/missing"):
            self._answer(404, {"error_code": 404, "message": "Connector missing not found"})
        else:
            self._answer(200, {"ok": True})

    def _answer(self, status: int, body: dict[str, object]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_worker() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeWorker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_basic_auth_is_sent_and_a_refusal_says_so_without_the_password(fake_worker: str) -> None:
    good = connect.ConnectClient(ConnectConfig("c", fake_worker, "kazami", "right-pw", timeout=2))
    assert good.request("GET", "/connectors") == {"ok": True}
    wrong = connect.ConnectClient(ConnectConfig("c", fake_worker, "kazami", "wrong-pw", timeout=2))
    with pytest.raises(ClusterAuthFailed) as refused:
        wrong.request("GET", "/connectors")
    assert "refused the console's credentials (401)" in str(refused.value)
    assert "wrong-pw" not in str(refused.value)
    with pytest.raises(NotFound):
        good.request("GET", "/connectors/missing/status")
    # A worker that rebalances is asked again within the time-out.
    _FakeWorker.rebalancing[0] = 2
    assert good.request("GET", "/connectors/busy/status") == {"ok": True}


def test_the_connectors_of_each_connect_cluster_come_in_one_request(fake_worker: str) -> None:
    _FakeWorker.paths.clear()
    clients = [connect.ConnectClient(ConnectConfig(n, fake_worker, "kazami", "right-pw")) for n in ("one", "two")]
    found = connect.list_all(clients)
    assert sorted((c.connect, c.name) for c in found.connectors) == [
        (connect_name, name) for connect_name in ("one", "two") for name in "abc"
    ]
    assert _FakeWorker.paths == ["/connectors?expand=status&expand=info"] * 2
    assert found.unanswered == {}
