"""A secured cluster: the embedded cluster with a SASL_SSL listener (certificates made for the test, a
client certificate required) reached with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 through the broker
functions and the console; refusals are clear, quick and never show a password.

The cluster is this module's own (one broker; ZooKeeper 12381, PLAINTEXT 19292, SASL_SSL 19392), so
it runs beside the session's test cluster."""

from __future__ import annotations

import logging
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.client.connection import ClusterConnection
from broker.cluster.overview import get_overview
from broker.errors import ClusterAuthFailed
from broker.local import launcher
from broker.local.certs import encrypt_key, generate_certs
from broker.messages import read as messages
from broker.messages.produce import do_produce
from broker.topics.changes import do_create_topic
from tests.conftest import TEST_VAR

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("it starts a ZooKeeper-mode cluster of its own, run by the ZooKeeper session"),
]

DATA = TEST_VAR / "secure-cluster"
ZOOKEEPER_PORT = 12381
BASE_PORT = 19292
OFFSET = 100
SECURE_PORT = BASE_PORT + OFFSET
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Refusal tests use a short time-out: the error must come within it (plus a quick check), not later.
QUICK = 1.0

_up_output: list[str] = []


@pytest.fixture(scope="module")
def secure_cluster() -> Iterator[launcher.ClusterLayout]:
    launcher.down(DATA, echo=lambda _: None)
    shutil.rmtree(DATA, ignore_errors=True)
    layout = launcher.up(
        DATA,
        brokers=1,
        zookeeper_port=ZOOKEEPER_PORT,
        base_port=BASE_PORT,
        sasl_ssl_port_offset=OFFSET,
        echo=_up_output.append,
    )
    try:
        yield layout
    finally:
        launcher.down(DATA, echo=lambda _: None)


@pytest.fixture(scope="module")
def listener(secure_cluster: launcher.ClusterLayout) -> launcher.SecureListener:
    return launcher.secure_listener(secure_cluster)


@pytest.fixture
def connect() -> Iterator[Any]:
    """Opens ClusterConnections that are closed after the test."""
    opened: list[ClusterConnection] = []

    def open_(config: Any) -> ClusterConnection:
        opened.append(ClusterConnection(config))
        return opened[-1]

    yield open_
    for conn in opened:
        conn.close()


def _all_passwords(listener: launcher.SecureListener) -> list[str]:
    return [u.password for u in listener.users]


def _log_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every record at DEBUG, kafka-python's too (the console's settings keep it at ERROR)."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="kafka")


def test_up_says_where_the_secure_listener_is_and_keeps_its_secrets_private(
    secure_cluster: launcher.ClusterLayout, listener: launcher.SecureListener
) -> None:
    output = "\n".join(_up_output)
    assert f"SASL_SSL     127.0.0.1:{SECURE_PORT}" in output
    assert str(listener.secrets) in output
    for password in _all_passwords(listener):
        assert password not in output
        for log in (DATA / "logs").rglob("*"):
            if log.is_file():
                assert password not in log.read_text(errors="replace"), log
    for private in (listener.secrets, DATA / "config" / "server-0.properties", listener.client_key):
        assert private.stat().st_mode & 0o777 == 0o600
    status = launcher.status(DATA)
    assert status["sasl_ssl"]["bootstrap_servers"] == f"127.0.0.1:{SECURE_PORT}"  # type: ignore[index]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_it_creates_writes_and_reads_a_topic_over_sasl_ssl(
    listener: launcher.SecureListener, connect: Any, caplog: pytest.LogCaptureFixture, mechanism: str
) -> None:
    _log_everything(caplog)
    config = listener.client_config(mechanism)
    assert config.ssl_check_hostname
    assert config.ssl_certfile
    conn = connect(config)
    topic = f"secure-{mechanism.lower()}-{secrets.token_hex(3)}"
    do_create_topic(conn, topic, 1, 1)
    produced = do_produce(conn, topic, b"key", f"over {mechanism}".encode())
    page = messages.get_page(conn, topic, 0)
    assert [(m.key, m.value) for m in page.messages] == [(b"key", f"over {mechanism}".encode())]
    assert page.messages[0].offset == produced.offset
    overview = get_overview(conn)
    assert [(b.host, b.port) for b in overview.brokers] == [("127.0.0.1", SECURE_PORT)]
    for password in _all_passwords(listener):
        assert password not in caplog.text
    assert "SaslAuthenticate" in caplog.text  # the requests were logged, with the password masked


def test_group_lag_and_lag_in_time_are_read_over_sasl_ssl(listener: launcher.SecureListener, connect: Any) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from broker.groups.lag import get_group

    config = listener.client_config("SCRAM-SHA-512")
    conn = connect(config)
    topic, group = f"secure-lag-{secrets.token_hex(3)}", f"secure-group-{secrets.token_hex(3)}"
    do_create_topic(conn, topic, 1, 1)
    for n in range(3):
        do_produce(conn, topic, None, f"m{n}".encode())
    committer = KafkaConsumer(group_id=group, enable_auto_commit=False, **config.client_options())
    try:
        committer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
    finally:
        committer.close(autocommit=False)
    found = get_group(conn, group)
    assert found.total_lag == 2
    assert found.max_lag_ms is not None  # the timestamp of the first waiting message was read too


def test_the_hostname_check_passes_for_localhost(listener: launcher.SecureListener, connect: Any) -> None:
    config = listener.client_config("SCRAM-SHA-512", bootstrap_servers=(f"localhost:{SECURE_PORT}",))
    assert get_overview(connect(config)).brokers


def test_a_wrong_password_is_a_quick_clear_error_that_never_shows_it(
    listener: launcher.SecureListener, connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _log_everything(caplog)
    wrong = "wrong-" + secrets.token_urlsafe(12)
    config = listener.client_config("SCRAM-SHA-256", sasl_password=wrong, timeout=QUICK)
    conn = connect(config)
    started = time.monotonic()
    with pytest.raises(ClusterAuthFailed) as refused:
        get_overview(conn)
    assert time.monotonic() - started < QUICK + 1.5
    message = str(refused.value)
    assert f"SASL authentication failed for user '{launcher.SCRAM_USER}' (SCRAM-SHA-256)" in message
    assert "wrong user name or password" in message
    # Asked again, it answers at once with the same reason (no bootstrap that cannot succeed).
    started = time.monotonic()
    with pytest.raises(ClusterAuthFailed, match="SASL authentication failed"):
        get_overview(conn)
    assert time.monotonic() - started < 1.0
    with pytest.raises(ClusterAuthFailed), conn.consumer():
        pass
    for shown in (message, repr(refused.value), repr(config), caplog.text):
        assert wrong not in shown
        for password in _all_passwords(listener):
            assert password not in shown


def test_a_wrong_plain_password_fails_the_producer_clearly(listener: launcher.SecureListener, connect: Any) -> None:
    wrong = "wrong-" + secrets.token_urlsafe(12)
    conn = connect(listener.client_config("PLAIN", sasl_password=wrong, timeout=QUICK))
    started = time.monotonic()
    with pytest.raises(ClusterAuthFailed, match=f"user '{launcher.PLAIN_USER}' .PLAIN.") as refused:
        conn.producer()
    assert time.monotonic() - started < QUICK + 1.5
    assert wrong not in str(refused.value)


def test_a_broker_certificate_from_an_unknown_ca_is_refused_clearly(
    listener: launcher.SecureListener, connect: Any, tmp_path: Path
) -> None:
    other = generate_certs(tmp_path)
    conn = connect(listener.client_config("PLAIN", ssl_cafile=str(other.ca), timeout=QUICK))
    with pytest.raises(ClusterAuthFailed) as refused:
        get_overview(conn)
    assert f"TLS: the certificate of the broker at 127.0.0.1:{SECURE_PORT} is not signed by the CA in {other.ca}" in (
        str(refused.value)
    )


def test_a_missing_or_unknown_client_certificate_is_refused_clearly(
    listener: launcher.SecureListener, connect: Any, tmp_path: Path
) -> None:
    missing = connect(listener.client_config("PLAIN", ssl_certfile=None, ssl_keyfile=None, timeout=QUICK))
    with pytest.raises(ClusterAuthFailed, match="requires a client certificate and none is configured"):
        get_overview(missing)
    other = generate_certs(tmp_path)
    stranger = connect(
        listener.client_config(
            "PLAIN", ssl_certfile=str(other.client_cert), ssl_keyfile=str(other.client_key), timeout=QUICK
        )
    )
    with pytest.raises(ClusterAuthFailed, match=f"refused the client certificate in {other.client_cert}"):
        get_overview(stranger)


def test_an_encrypted_client_key_opens_with_its_password(
    listener: launcher.SecureListener, connect: Any, tmp_path: Path
) -> None:
    key_password = secrets.token_urlsafe(8)
    locked = encrypt_key(listener.client_key, tmp_path / "locked-key.pem", key_password)
    config = listener.client_config("SCRAM-SHA-512", ssl_keyfile=str(locked), ssl_password=key_password)
    assert key_password not in repr(config)
    assert get_overview(connect(config)).brokers


@pytest.mark.django_db
def test_the_console_shows_a_secure_cluster_from_a_clusters_file_without_its_password(
    listener: launcher.SecureListener,
    clusters_reset: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    client: Any,
    django_user_model: Any,
) -> None:
    user = listener.user_for("SCRAM-SHA-512")
    file = tmp_path / "clusters.toml"
    file.write_text(
        "[clusters.secure]\n"
        f'bootstrap_servers = ["127.0.0.1:{SECURE_PORT}"]\n'
        'security_protocol = "SASL_SSL"\n'
        'sasl_mechanism = "SCRAM-SHA-512"\n'
        f'sasl_username = "{user.name}"\n'
        'sasl_password_env = "SECURE_TEST_PASSWORD"\n'
        f'ssl_cafile = "{listener.ca}"\n'
        f'ssl_certfile = "{listener.client_cert}"\n'
        f'ssl_keyfile = "{listener.client_key}"\n'
        f"timeout = {QUICK}\n"
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    monkeypatch.setenv("SECURE_TEST_PASSWORD", user.password)
    client.force_login(django_user_model.objects.create_superuser("t", "t@example.com", "pw"))

    api = client.get("/api/clusters/secure/")
    assert api.status_code == 200, api.content
    assert [(b["host"], b["port"]) for b in api.json()["brokers"]] == [("127.0.0.1", SECURE_PORT)]
    page = client.get("/clusters/secure/")
    assert page.status_code == 200
    assert "cannot be reached" not in page.content.decode()
    for response in (api, page):
        assert user.password not in response.content.decode()

    # The same cluster with a wrong password: a clear refusal, in the API's own words, without it.
    from console.config.clusters import reset_for_tests

    wrong = "wrong-" + secrets.token_urlsafe(12)
    monkeypatch.setenv("SECURE_TEST_PASSWORD", wrong)
    reset_for_tests()
    refused = client.get("/api/clusters/secure/")
    assert refused.status_code == 503
    assert refused.json()["error"] == "cluster_auth_failed"
    assert "SASL authentication failed for user" in refused.json()["message"]
    refused_page = client.get("/clusters/secure/")
    assert "SASL authentication failed for user" in refused_page.content.decode()
    for response in (refused, refused_page):
        assert wrong not in response.content.decode()
        assert user.password not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_topic_is_copied_to_the_secure_cluster_byte_for_byte(
    listener: launcher.SecureListener,
    kafka_cluster: launcher.ClusterLayout,
    clusters_reset: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    connect: Any,
) -> None:
    from tests.conftest import logged_in
    from tests.integration.kafka_helpers import create_topic, produce, unique
    from tests.integration.test_transfers import wait_task

    user = listener.user_for("SCRAM-SHA-512")
    file = tmp_path / "clusters.toml"  # beside the test cluster, `local` (KAFKA_BOOTSTRAP_SERVERS)
    file.write_text(
        "[clusters.secure]\n"
        f'bootstrap_servers = ["127.0.0.1:{SECURE_PORT}"]\n'
        'security_protocol = "SASL_SSL"\n'
        'sasl_mechanism = "SCRAM-SHA-512"\n'
        f'sasl_username = "{user.name}"\n'
        'sasl_password_env = "SECURE_TEST_PASSWORD"\n'
        f'ssl_cafile = "{listener.ca}"\n'
        f'ssl_certfile = "{listener.client_cert}"\n'
        f'ssl_keyfile = "{listener.client_key}"\n'
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    monkeypatch.setenv("SECURE_TEST_PASSWORD", user.password)
    from console.config.clusters import reset_for_tests

    reset_for_tests()
    source = create_topic(unique("to-secure"), partitions=1)
    records = [(b"k%d" % i, b"v%d" % i if i % 5 else None) for i in range(50)]
    produce(source, records, partition=0, headers=[("h", b"x"), ("h", b"y")])
    secure = connect(listener.client_config("SCRAM-SHA-512"))
    target = f"copied-{secrets.token_hex(3)}"
    do_create_topic(secure, target, 1, 1)

    operator = logged_in("operator")
    started = operator.post(
        f"/api/clusters/local/topics/{source}/copy/", {"to_topic": target, "to_cluster": "secure"}, "application/json"
    )
    assert started.status_code == 202, started.content
    done = wait_task(operator, started.json()["id"])
    assert done["status"] == "succeeded", done
    assert done["progress"]["written"] == 50
    page = messages.get_page(secure, target, 0, limit=100)
    copied = [(m.key, m.value, m.headers) for m in page.messages if m.control is None]
    assert copied == [(k, v, [("h", b"x"), ("h", b"y")]) for k, v in records]
