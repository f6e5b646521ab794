"""Shared fixtures. The test cluster runs on its own ports, so a developer's `make run` cluster
(2181, 9092-9094) is never touched, and it is started at most once per test session."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from broker.local import launcher

REPO = Path(__file__).resolve().parent.parent
# Two test runs on one machine (say a developer's and a helper's) each need a cluster of their own:
# KAZAMI_TEST_SLOT=N moves this run's cluster and files N steps away from the default ones.
SLOT: int = int(os.environ.get("KAZAMI_TEST_SLOT", "0"))
TEST_VAR: Path = REPO / "var" / ("test" if SLOT == 0 else f"test-{SLOT}")
ARTIFACTS = REPO / "var" / "test-artifacts"

ZOOKEEPER_PORT = 12181 + 10 * SLOT
BASE_PORT = 19092 + 10 * SLOT
BOOTSTRAP = ",".join(f"127.0.0.1:{BASE_PORT + b}" for b in range(3))
# The test cluster's Kafka Connect worker (started only by tests that need it: the connect_worker fixture).
CONNECT_PORT = 18083 + 10 * SLOT
CONNECT_URL = f"http://127.0.0.1:{CONNECT_PORT}"
# The session's schema registry (Apicurio, started only by tests that need it: the schema_registry fixture), on
# loopback: its HTTP API on REGISTRY_PORT, its management port (health) on REGISTRY_PORT + 1; its files (state, log)
# in REGISTRY_DATA. It needs no Kafka: the same registry serves the ZooKeeper and the KRaft runs.
REGISTRY_PORT = 18081 + 10 * SLOT
REGISTRY_URL = f"http://127.0.0.1:{REGISTRY_PORT}/apis/ccompat/v7"
REGISTRY_DATA = TEST_VAR / "registry"
# The session's warm Spark (a Spark Connect server, analytics/server.py; started only by tests that need it: the
# spark_server fixture) on loopback port SPARK_PORT, its files (state, token, log) in SPARK_DATA. Every Spark test
# of the run, in this process or in a console's job processes, sends its plans to it.
SPARK_PORT = 15102 + 10 * SLOT
SPARK_DATA = TEST_VAR / "spark-connect"

# Which cluster the session's tests run against: `zookeeper` (the default: Kafka 3.9 with ZooKeeper)
# or `kraft` (Kafka 4 in KRaft mode, three brokers and three controllers of their own). `make test`
# runs the suites once on each. Tests of ZooKeeper itself carry the `zookeeper` marker and are skipped
# on KRaft, saying why.
CLUSTER_KIND = os.environ.get("KAZAMI_TEST_CLUSTER", "zookeeper")
if CLUSTER_KIND not in ("zookeeper", "kraft"):
    raise SystemExit(f"KAZAMI_TEST_CLUSTER must be zookeeper or kraft, not {CLUSTER_KIND!r}")
KRAFT: bool = CLUSTER_KIND == "kraft"
KRAFT_KAFKA_VERSION = launcher.DEFAULT_KAFKA4_VERSION
KRAFT_CONTROLLERS = 3
# The session cluster's data folder (tests stop and start its brokers through it).
CLUSTER_DATA = TEST_VAR / ("cluster-kraft" if KRAFT else "cluster")

# The console under test may stop and start the test cluster's brokers (admins, replication page).
os.environ["KAZAMI_EMBEDDED_CLUSTER"] = str(CLUSTER_DATA)
django_settings.KAZAMI_EMBEDDED_CLUSTER = str(CLUSTER_DATA)

# Before anything reads them: the console under test shows the test cluster as `local`.
os.environ["KAFKA_BOOTSTRAP_SERVERS"] = BOOTSTRAP
os.environ["ZOOKEEPER_CONNECT"] = "" if KRAFT else f"127.0.0.1:{ZOOKEEPER_PORT}"
os.environ.pop("KAZAMI_CLUSTERS_FILE", None)
# The console under test knows the worker whether it runs or not (pages say so when it does not).
os.environ["KAFKA_CONNECT_URLS"] = f"local={CONNECT_URL}"
# Clusters the tests start with `python -m broker.local up` get no Connect worker (it would take port 8083
# and seconds of start); the tests that need one use the connect_worker fixture.
os.environ["KAZAMI_EMBEDDED_CONNECT"] = "0"
# The console under test knows the session's registry whether it runs or not, as the Connect worker; clusters
# started with `python -m broker.local up` get none of their own (it would take port 8081 and seconds of start).
os.environ["SCHEMA_REGISTRY_URL"] = REGISTRY_URL
os.environ["KAZAMI_EMBEDDED_REGISTRY"] = "0"
# Tests write with their own clients and read through the console at once: no shared answers kept
# (broker/shared_reads.py). Tests of that sharing set max_age themselves.
os.environ["KAZAMI_MAX_AGE"] = "0"
# No background sampler in the test process: tests that need lag history sample explicitly. The
# settings may already be loaded when this runs (pytest-django sets Django up early), so both.
os.environ["KAZAMI_LAG_SAMPLER"] = "0"
django_settings.KAZAMI_LAG_SAMPLER = False
# Hashing test passwords the production way (a million PBKDF2 rounds) would cost seconds per test.
django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the KRaft run, skip what needs ZooKeeper (the marker's argument, when given, says why); on the
    ZooKeeper-mode run, skip what only a KRaft cluster has."""
    for item in items:
        if KRAFT and (marker := item.get_closest_marker("zookeeper")):
            why = marker.args[0] if marker.args else "it looks at ZooKeeper itself"
            item.add_marker(pytest.mark.skip(reason=f"needs ZooKeeper ({why}); this run's cluster is KRaft"))
        elif not KRAFT and item.get_closest_marker("kraft_only"):
            item.add_marker(pytest.mark.skip(reason="needs a KRaft cluster; run with KAZAMI_TEST_CLUSTER=kraft"))


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[launcher.ClusterLayout]:
    """A real 3-broker cluster, fresh for this session: ZooKeeper on 12181 and brokers on 19092-19094, or
    with KAZAMI_TEST_CLUSTER=kraft, Kafka 4 brokers on the same ports and three controllers of their own."""
    data = CLUSTER_DATA
    launcher.down(data, echo=lambda _: None)
    shutil.rmtree(data, ignore_errors=True)
    if KRAFT:
        layout = launcher.up(
            data,
            brokers=3,
            base_port=BASE_PORT,
            kafka_version=KRAFT_KAFKA_VERSION,
            controllers=KRAFT_CONTROLLERS,
            echo=lambda _: None,
        )
    else:
        layout = launcher.up(data, brokers=3, zookeeper_port=ZOOKEEPER_PORT, base_port=BASE_PORT, echo=lambda _: None)
    try:
        yield layout
    finally:
        from console.background import commit_watch

        commit_watch.stop_all()  # the offsets topic's readers the tests' sampler rounds left open
        launcher.down(data, echo=lambda _: None)


@pytest.fixture(scope="session")
def connect_worker(kafka_cluster: launcher.ClusterLayout) -> Iterator[str]:
    """The test cluster's Kafka Connect worker (distributed mode, REST on CONNECT_PORT), started the first
    time a test asks for it and stopped at the end of the session; yields its URL."""
    from broker.local import connect

    connect.start(CLUSTER_DATA, port=CONNECT_PORT, echo=lambda _: None)
    try:
        yield CONNECT_URL
    finally:
        connect.stop(CLUSTER_DATA, echo=lambda _: None)


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[str]:
    """A real schema registry (Apicurio Registry from Maven Central, in memory) for this session: started the
    first time a test asks for it, stopped at the end of the session; yields its Confluent-compatible base URL,
    ``http://127.0.0.1:<REGISTRY_PORT>/apis/ccompat/v7`` (REGISTRY_URL; the port moves with KAZAMI_TEST_SLOT).
    The console under test already points at it (SCHEMA_REGISTRY_URL is set when this file is imported).

    It starts empty with global compatibility BACKWARD, and is shared by every test of the session and never
    emptied between them: give each test subjects of its own (e.g. ``f"{topic}-value"`` of a topic named with
    a uuid), and change compatibility per subject (``PUT /config/<subject>``), not the global level, or put the
    global level back. Needs no Kafka cluster: ask for ``kafka_cluster`` too to write records. A missing Java 21
    or registry fails the test with what to install (``make install`` fetches both)."""
    from broker.errors import KazamiError
    from broker.local import registry

    registry.stop(REGISTRY_DATA, echo=lambda _: None)  # one a crashed run left behind holds old subjects
    try:
        state = registry.start(REGISTRY_DATA, port=REGISTRY_PORT, echo=lambda _: None)
    except KazamiError as exc:  # Java 21 or the server missing, a port taken, a start that failed
        pytest.fail(f"the schema registry did not start: {exc}", pytrace=False)
    try:
        yield state.url
    finally:
        registry.stop(REGISTRY_DATA, echo=lambda _: None)


def spark_remote() -> str:
    """The address of the session's Spark Connect server, with its token (known before the server starts: a
    console under test can be given it at its start)."""
    from analytics import server

    return f"sc://localhost:{SPARK_PORT}/;token={server.token(SPARK_DATA.resolve())}"


@pytest.fixture(scope="session")
def spark_server() -> Iterator[str]:
    """The session's warm Spark: one Spark Connect server (local[2], no web UI) for every test that runs Spark,
    started the first time a test asks for it; yields its address (what KAZAMI_SPARK_REMOTE takes). Missing
    Java, PySpark or connector jars fail the test with what to install."""
    from analytics import server
    from analytics.spark import SparkSettings
    from broker.errors import KazamiError

    server.stop(SPARK_DATA, echo=lambda _: None)  # one a crashed run left behind
    settings = SparkSettings(master="local[2]", ui=False, shuffle_partitions=2, app_name="kazami-tests")
    try:
        server.start(SPARK_DATA, port=SPARK_PORT, settings=settings, echo=lambda _: None)
    except KazamiError as exc:
        pytest.fail(f"the Spark Connect server did not start: {exc}", pytrace=False)
    try:
        yield spark_remote()
    finally:
        server.stop(SPARK_DATA, echo=lambda _: None)


@pytest.fixture(scope="session")
def spark(spark_server: str) -> Iterator[Any]:
    """A session on the session's Spark Connect server, shared by every test that runs Spark in this process."""
    from analytics.spark import connect_session

    session = connect_session(spark_server)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def _classic_session() -> Iterator[Any]:
    from analytics.spark import SparkSettings, start_session

    with _classic_mode():
        session = start_session(
            SparkSettings(master="local[2]", ui=False, shuffle_partitions=2, app_name="kazami-tests-classic")
        )
    try:
        yield session
    finally:
        with _classic_mode():
            session.stop()


@pytest.fixture
def classic_spark(_classic_session: Any) -> Iterator[Any]:
    """A Spark of this process's own (local[2]), for what runs one in production rather than the warm Spark: the
    live figures' streaming query, whose batches call back into the process that started it. While the test runs,
    PySpark's functions build classic columns (this process is otherwise in Spark Connect's mode)."""
    with _classic_mode():
        yield _classic_session


@contextlib.contextmanager
def _classic_mode() -> Iterator[None]:
    saved = {k: os.environ.pop(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE") if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@pytest.fixture
def clusters_reset() -> Iterator[None]:
    """Forget cached cluster connections before and after a test that changes cluster settings."""
    from console.config.clusters import reset_for_tests

    reset_for_tests()
    yield
    reset_for_tests()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def console_user(role: str = "admin", username: str | None = None) -> Any:
    """A user holding ``role`` (viewer, operator or admin); needs database access."""
    from django.contrib.auth.models import User

    from console.access import set_role

    name = username or f"test-{role}"
    user = User.objects.filter(username=name).first() or User.objects.create_user(name, password="test-password-1")
    set_role(user, role)
    return user


def logged_in(role: str = "admin", username: str | None = None) -> Client:
    """A Django test client logged in as a new user with ``role``."""
    client = Client()
    client.force_login(console_user(role, username))
    return client


def websocket_headers(client: Client | None = None) -> list[tuple[bytes, bytes]]:
    """Headers a browser of the console sends when it opens a websocket: our origin, and the session
    cookie of ``client`` (a new admin when None)."""
    client = client or logged_in()
    return [
        (b"origin", b"http://127.0.0.1:8888"),
        (b"host", b"127.0.0.1:8888"),
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
    ]


# The ACL and SCRAM tests' secured cluster (with Kafka's authorizer), shared by their integration and browser modules.
from tests.acl_cluster import acl_cluster  # noqa: E402, F401
