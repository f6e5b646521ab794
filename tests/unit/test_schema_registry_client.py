"""The schema registry client without a registry: its settings (environment, clusters file), what it refuses,
secrets kept out of repr and errors, the id cache (one request per id, failures remembered briefly), and a
registry that does not answer. A small HTTP server stands in for the registry where a request is needed; the
real registry's answers are tested in tests/integration/test_schemas_*.py."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from broker.errors import ConfigError
from broker.schemas import registry as reg
from broker.schemas.model import RegistryError, SchemaReference
from broker.schemas.registry import Registry, RegistryConfig
from console.config import clusters
from console.config import registry as registry_settings

SECRET = "pw-Zq81-never-shown"
TOKEN = "tok-Yx22-never-shown"


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("SCHEMA_REGISTRY_URL", "KAZAMI_CLUSTERS_FILE", "SCHEMA_REGISTRY_USERNAME", "SCHEMA_REGISTRY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    clusters.reset_for_tests()
    registry_settings.reset_for_tests()
    yield
    clusters.reset_for_tests()
    registry_settings.reset_for_tests()


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", "http://sr:8081/apis/ccompat/v7/")
    monkeypatch.setenv("SCHEMA_REGISTRY_USERNAME", "kazami")
    monkeypatch.setenv("SCHEMA_REGISTRY_PASSWORD", SECRET)
    monkeypatch.setenv("SCHEMA_REGISTRY_SSL_VERIFY", "false")
    monkeypatch.setenv("SCHEMA_REGISTRY_TIMEOUT", "2.5")
    found = registry_settings.from_env()
    assert found is not None
    assert (found.url, found.username, found.password, found.ssl_verify, found.timeout) == (
        "http://sr:8081/apis/ccompat/v7",
        "kazami",
        SECRET,
        False,
        2.5,
    )
    assert SECRET not in repr(found)
    assert found.secrets == (SECRET,)


def test_no_url_no_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert registry_settings.from_env() is None
    assert registry_settings.registry_for("local") is None


def test_the_default_timeout_is_five_seconds_and_a_bad_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", "http://sr:8081")
    found = registry_settings.from_env()
    assert found is not None
    assert found.timeout == 5.0
    monkeypatch.setenv("SCHEMA_REGISTRY_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="SCHEMA_REGISTRY_TIMEOUT"):
        registry_settings.from_env()


def test_one_registry_per_cluster_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", "http://sr:8081")
    first = registry_settings.registry_for("local")
    assert first is not None
    assert registry_settings.registry_for("local") is first
    assert registry_settings.registry_for("other") is None


def test_settings_from_the_clusters_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        "[clusters.prod]\nbootstrap_servers = ['k:9092']\n"
        "[clusters.prod.schema_registry]\nurl = 'https://sr.prod:8081'\ntoken_env = 'PROD_SR_TOKEN'\n"
        "ssl_verify = false\ntimeout = 2\n"
        "[clusters.stage]\nbootstrap_servers = ['s:9092']\n"
        "[clusters.stage.schema_registry]\nurl = 'http://sr.stage:8081/'\nusername = 'kz'\n"
        "password_env = 'STAGE_SR_PW'\n"
    )
    monkeypatch.setenv("PROD_SR_TOKEN", TOKEN)
    monkeypatch.setenv("STAGE_SR_PW", SECRET)
    found = registry_settings.from_file(file, 5.0)
    prod, stage = found["prod"], found["stage"]
    assert (prod.url, prod.token, prod.username, prod.ssl_verify, prod.timeout) == (
        "https://sr.prod:8081",
        TOKEN,
        None,
        False,
        2.0,
    )
    assert (stage.url, stage.username, stage.password, stage.timeout) == ("http://sr.stage:8081", "kz", SECRET, 5.0)
    assert TOKEN not in repr(prod)
    assert SECRET not in repr(stage)
    # Through the console's loading: the clusters of the file, each with its own registry.
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    prod_registry = registry_settings.registry_for("prod")
    assert prod_registry is not None
    assert prod_registry.url == "https://sr.prod:8081"
    assert registry_settings.registry_for("local") is None
    monkeypatch.delenv("PROD_SR_TOKEN")
    with pytest.raises(ConfigError, match="PROD_SR_TOKEN") as caught:
        registry_settings.from_file(file, 5.0)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("username = 'u'", "needs a url"),
        ("url = 'http://h'\ncolour = 'red'", "unknown key 'colour'"),
        ("url = 'http://h'\nssl_verify = 'no'", "ssl_verify must be true or false"),
        ("url = 'http://h'\ntimeout = 'soon'", "timeout must be a number"),
        ("url = 'http://h'\nusername = 'u'", "both a username and a password"),
    ],
)
def test_bad_tables_are_refused(tmp_path: Path, table: str, message: str) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(f"[clusters.prod]\nbootstrap_servers = ['k:9092']\n[clusters.prod.schema_registry]\n{table}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        registry_settings.from_file(file, 5.0)
    assert "[clusters.prod.schema_registry]" in str(caught.value)


def test_a_registry_for_an_unknown_cluster_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "clusters.toml"
    file.write_text(
        "[clusters.prod]\nbootstrap_servers = ['k:9092']\n[clusters.nope.schema_registry]\nurl = 'http://h'\n"
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    # The clusters file itself refuses a table of a cluster it does not declare.
    with pytest.raises(ConfigError, match=r"clusters\.nope"):
        registry_settings.registry_for("prod")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "ftp://x"}, "not http"),
        ({"url": f"http://user:{SECRET}@host:8081"}, "not in the URL"),
        ({"username": "u"}, "both"),
        ({"username": "u", "password": SECRET, "token": TOKEN}, "not both"),
        ({"timeout": 0}, "positive"),
        ({"ssl_cafile": "/nonexistent/ca.pem"}, "ssl_cafile /nonexistent/ca.pem is not a file"),
        ({"ssl_certfile": "-----BEGIN CERTIFICATE-----\nMII"}, "not a file path"),
    ],
)
def test_bad_settings_are_refused_without_echoing_secrets(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"url": "http://h:8081"}
    with pytest.raises(ConfigError, match=message) as caught:
        RegistryConfig(**{**base, **kwargs})
    assert SECRET not in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert "-----BEGIN" not in str(caught.value)


def test_levels_and_types_are_checked() -> None:
    assert reg.check_level(" full_transitive ") == "FULL_TRANSITIVE"
    with pytest.raises(RegistryError, match="not a compatibility level") as caught:
        reg.check_level("SIDEWAYS")
    assert caught.value.status == 400
    assert [reg.check_type(t) for t in (None, "", "avro", "protobuf", "json", "JSONSCHEMA", "json_schema")] == [
        "AVRO",
        "AVRO",
        "AVRO",
        "PROTOBUF",
        "JSON",
        "JSON",
        "JSON",
    ]
    with pytest.raises(RegistryError, match="not a schema type"):
        reg.check_type("thrift")
    assert reg.parse_references([{"name": "a.proto", "subject": "a", "version": "2"}]) == (
        SchemaReference("a.proto", "a", 2),
    )
    for bad in ({"name": "a"}, [{"name": "a", "subject": "s", "version": "x"}], [{"subject": "s", "version": 1}]):
        with pytest.raises(RegistryError):
            reg.parse_references(bad)


# ---------------------------------------------------------------- against a stand-in registry


class _FakeRegistry(BaseHTTPRequestHandler):
    """Answers /schemas/ids/<id> (slowly, counting), and echoes the credentials it got into its refusals, as a
    careless proxy might: the client must not pass them on."""

    asked: ClassVar[list[str]] = []
    auth: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        self.auth.append(self.headers.get("Authorization"))
        header = self.headers.get("Authorization") or ""
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            if password != "right":
                self._answer(401, {"error_code": 40101, "message": f"Unauthorized: {user}:{password} ({header})"})
                return
        if header.startswith("Bearer ") and header != "Bearer right-token":
            self._answer(401, {"error_code": 40101, "message": f"bad token {header[7:]}"})
            return
        if self.path.startswith("/schemas/ids/7/versions"):
            self._answer(200, [{"subject": "orders-value", "version": 3}])
        elif self.path.startswith("/schemas/ids/7"):
            time.sleep(0.2)
            self._answer(200, {"schema": '"string"', "references": []})
        elif self.path.startswith("/schemas/ids/"):
            self._answer(404, {"error_code": 40403, "message": "Schema not found"})
        elif self.path.startswith("/drop") and self.asked.count(self.path) == 1:  # the first time only
            self.close_connection = True  # closed without a status line, as a server that drops a connection
        elif self.path.startswith("/fail"):
            self._answer(500, {"error_code": 50001, "message": f"Store error; header was {header}"})
        else:
            self._answer(200, {})

    def do_POST(self) -> None:
        self.asked.append(f"POST {self.path}")
        self.close_connection = True  # never answers a change: the client must not send it twice

    def _answer(self, status: int, body: object) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_registry() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeRegistry.asked.clear()
    _FakeRegistry.auth.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_schema_id_is_asked_once_however_many_ask_at_once(fake_registry: str) -> None:
    registry = Registry(RegistryConfig(fake_registry, timeout=2))
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(registry.schema_by_id, [7] * 16))
    assert {f.text for f in found} == {'"string"'}
    assert found[0].schema_type == "AVRO"
    assert (found[0].subject, found[0].version) == ("orders-value", 3)
    assert [p for p in _FakeRegistry.asked if p == "/schemas/ids/7"] == ["/schemas/ids/7"]
    registry.schema_by_id(7)
    assert len([p for p in _FakeRegistry.asked if p == "/schemas/ids/7"]) == 1


def test_an_unknown_id_is_remembered_briefly(fake_registry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry(RegistryConfig(fake_registry, timeout=2))
    for _ in range(5):
        with pytest.raises(RegistryError) as caught:
            registry.schema_by_id(99)
        assert (caught.value.status, caught.value.code) == (404, 40403)
    assert _FakeRegistry.asked.count("/schemas/ids/99") == 1
    monkeypatch.setattr(reg, "FAILED_ID_FOR", 0.0)
    registry._failed_ids.clear()
    with pytest.raises(RegistryError):
        registry.schema_by_id(99)
    assert _FakeRegistry.asked.count("/schemas/ids/99") == 2


def test_credentials_are_sent_and_kept_out_of_errors(fake_registry: str) -> None:
    good = Registry(RegistryConfig(fake_registry, username="kazami", password="right", timeout=2))
    assert good.request("GET", "/subjects") == {}
    assert _FakeRegistry.auth[-1] == "Basic " + base64.b64encode(b"kazami:right").decode()
    wrong = Registry(RegistryConfig(fake_registry, username="kazami", password=SECRET, timeout=2))
    with pytest.raises(RegistryError) as caught:
        wrong.request("GET", "/subjects")
    assert caught.value.status == 401
    assert "refused the console's credentials (401)" in str(caught.value)
    assert SECRET not in str(caught.value)
    bearer = Registry(RegistryConfig(fake_registry, token=TOKEN, timeout=2))
    with pytest.raises(RegistryError) as caught:
        bearer.request("GET", "/subjects")
    assert TOKEN not in str(caught.value)
    assert TOKEN not in repr(bearer)
    assert TOKEN not in repr(bearer.config)
    assert _FakeRegistry.auth[-1] == f"Bearer {TOKEN}"
    with pytest.raises(RegistryError) as caught:
        Registry(RegistryConfig(fake_registry, token="right-token", timeout=2)).request("GET", "/fail")
    assert (caught.value.status, caught.value.code) == (500, 50001)
    assert "right-token" not in str(caught.value)


def _silent_port() -> tuple[socket.socket, int]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener, listener.getsockname()[1]


def test_a_registry_that_does_not_answer_is_said_so_and_left_alone() -> None:
    listener, port = _silent_port()
    try:
        registry = Registry(RegistryConfig(f"http://127.0.0.1:{port}", username="u", password=SECRET, timeout=0.3))
        started = time.monotonic()
        with pytest.raises(RegistryError) as caught:
            registry.schema_by_id(1)
        first = time.monotonic() - started
        assert caught.value.status == 0
        assert "did not answer within 0.3 s" in str(caught.value)
        assert SECRET not in str(caught.value)
        # Asked again at once (another id, another call): the same error without waiting again.
        started = time.monotonic()
        for schema_id in range(2, 50):
            with pytest.raises(RegistryError):
                registry.schema_by_id(schema_id)
        with pytest.raises(RegistryError, match="did not answer"):
            registry.subjects()
        assert time.monotonic() - started < first
    finally:
        listener.close()


def test_a_refused_connection_is_a_readable_status_0() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = Registry(RegistryConfig(f"http://127.0.0.1:{port}", timeout=1))
    with pytest.raises(RegistryError, match="connection refused") as caught:
        registry.subjects()
    assert caught.value.status == 0
    assert caught.value.code is None


# ---------------------------------------------------------------- TLS


class _TlsRegistry(_FakeRegistry):
    peers: ClassVar[list[object]] = []

    def do_GET(self) -> None:
        self.peers.append(self.connection.getpeercert())
        self._answer(200, ["tls-subject"])


@pytest.fixture
def tls_registry(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """An https stand-in registry whose certificate a throwaway CA signed, requiring a client certificate of it."""
    import ssl

    from broker.local import certs

    files = certs.generate_certs(tmp_path / "certs")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TlsRegistry)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
    context.load_cert_chain(str(files.broker))
    context.verify_mode = ssl.CERT_REQUIRED
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _TlsRegistry.peers.clear()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()


def test_tls_with_a_ca_file_and_a_client_certificate(tls_registry: tuple[str, Any], tmp_path: Path) -> None:
    from broker.local import certs

    url, files = tls_registry
    mutual = RegistryConfig(
        url, ssl_cafile=str(files.ca), ssl_certfile=str(files.client_cert), ssl_keyfile=str(files.client_key), timeout=3
    )
    assert Registry(mutual).subjects() == ["tls-subject"]
    assert "kazami-client" in str(_TlsRegistry.peers[-1])
    # Without the client certificate the server refuses the handshake: a readable status 0.
    with pytest.raises(RegistryError) as caught:
        Registry(RegistryConfig(url, ssl_cafile=str(files.ca), timeout=3)).subjects()
    assert caught.value.status == 0
    assert "cannot be reached" in str(caught.value)
    # Another CA: the registry's certificate is not accepted, and said so; unless checking is off (tests only).
    other = certs.generate_certs(tmp_path / "other")
    stranger = RegistryConfig(
        url, ssl_cafile=str(other.ca), ssl_certfile=str(files.client_cert), ssl_keyfile=str(files.client_key), timeout=3
    )
    with pytest.raises(RegistryError, match="TLS: its certificate was not accepted") as caught:
        Registry(stranger).subjects()
    assert caught.value.status == 0
    unchecked = RegistryConfig(
        url,
        ssl_cafile=str(other.ca),
        ssl_certfile=str(files.client_cert),
        ssl_keyfile=str(files.client_key),
        ssl_verify=False,
        timeout=3,
    )
    assert Registry(unchecked).subjects() == ["tls-subject"]
    # A key that does not belong to the certificate is refused when the client is made, naming neither file's content.
    with pytest.raises(ConfigError, match="client certificate or key cannot be loaded"):
        Registry(RegistryConfig(url, ssl_certfile=str(files.client_cert), ssl_keyfile=str(other.client_key)))


def test_a_dropped_connection_is_tried_once_more_for_a_read_only(fake_registry: str) -> None:
    registry = Registry(RegistryConfig(fake_registry, timeout=2))
    assert registry.request("GET", "/drop") == {}  # dropped once, answered the second time
    assert _FakeRegistry.asked.count("/drop") == 2
    assert registry._down is None
    with pytest.raises(RegistryError, match="cannot be reached") as caught:
        registry.request("POST", "/subjects/s/versions", {"schema": '"string"'})
    assert caught.value.status == 0
    assert _FakeRegistry.asked.count("POST /subjects/s/versions") == 1
