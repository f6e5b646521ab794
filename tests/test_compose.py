"""The Docker Compose deployment: valid for a real Compose implementation, and documented as it is.

These tests need neither Django nor Kafka nor a Docker engine: ``docker-compose config`` only reads,
validates and normalizes docker-compose.yml. The table in docs/operations.md is compared with that normalized
configuration.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCUMENTATION = ROOT / "docs" / "operations.md"
HEADING = "## Docker Compose deployment"
TABLE_HEADER = ["Service", "Image", "Ports", "Volumes"]
EMPTY_CELL = {"—", "-", ""}

# Given to Compose so that ${KAZAMI_SECRET_KEY:?...} resolves; never a real key.
DUMMY_SECRET_KEY = "test-only-dummy-secret-key"
BROKERS = ("kafka-0", "kafka-1", "kafka-2")
EXPECTED_SERVICES = {
    "zookeeper",
    *BROKERS,
    "console",
    "schema-registry",
    "redis",
    "postgres",
    "spark-master",
    "spark-worker",
    "spark-connect",
}
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


# --- running Compose -----------------------------------------------------------------------------


def _compose_binary() -> str:
    """Absolute path of docker-compose; a missing one fails the test instead of skipping it."""
    path = shutil.which("docker-compose")
    if path is None:
        pytest.fail(
            "docker-compose is not on PATH, so docker-compose.yml cannot be checked. "
            "Run `make system-deps` to install it, then run the tests again.",
            pytrace=False,
        )
    return path


def _run_config(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Plain `config` prints the normalized file as YAML with Compose v1 and v2 alike
    # (v1 has no --format json).
    return subprocess.run(
        [_compose_binary(), "-f", str(COMPOSE_FILE), "config"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@functools.lru_cache(maxsize=1)
def _config_run() -> subprocess.CompletedProcess[str]:
    return _run_config({**os.environ, "KAZAMI_SECRET_KEY": DUMMY_SECRET_KEY})


def _config() -> dict[str, Any]:
    """docker-compose.yml as normalized by Compose (interpolated, merged, defaults filled in)."""
    run = _config_run()
    if run.returncode != 0:
        pytest.fail(f"`docker-compose config` exited {run.returncode}:\n{run.stderr}{run.stdout}", pytrace=False)
    config = yaml.safe_load(run.stdout)
    assert isinstance(config, dict), f"unexpected output of `docker-compose config`:\n{run.stdout}"
    return config


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _config()["services"]
    return services


# --- normalizing ports, volumes and environment ----------------------------------------------------


def _port_spec(entry: str | int | dict[str, Any]) -> str:
    """One port in the form of the documented table: host_ip:published:target, plus /proto unless tcp."""
    if isinstance(entry, dict):  # long syntax (Compose v2, and v1 for ports without a host IP)
        host_ip = entry.get("host_ip")
        published = entry.get("published")
        target = entry["target"]
        protocol = entry.get("protocol") or "tcp"
    else:  # short syntax: [host_ip:][published:]target[/protocol]
        text, _, protocol = str(entry).partition("/")
        protocol = protocol or "tcp"
        *given, target = text.rsplit(":", 2)
        host_ip, published = [None, None, *given][-2:]
    spec = ":".join(str(part) for part in (host_ip, published, target) if part not in (None, ""))
    return spec if protocol == "tcp" else f"{spec}/{protocol}"


def _published_ports(service: dict[str, Any]) -> set[str]:
    return {_port_spec(entry) for entry in service.get("ports", [])}


def _named_volumes(service: dict[str, Any]) -> set[str]:
    """Named volumes a service mounts (bind mounts and anonymous volumes left out)."""
    names: set[str] = set()
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            if entry.get("type", "volume") == "volume" and entry.get("source"):
                names.add(str(entry["source"]))
            continue
        source, separator, _ = str(entry).partition(":")
        if separator and not source.startswith(("/", ".", "~")):
            names.add(source)
    return names


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def _depends_on(service: dict[str, Any]) -> set[str]:
    return set(service.get("depends_on") or ())


def _listeners(value: str) -> dict[str, str]:
    """KAFKA_*LISTENERS as {name: host:port}, e.g. {"INTERNAL": "kafka-0:29092"}."""
    listeners: dict[str, str] = {}
    for item in value.split(","):
        name, _, address = item.strip().partition("://")
        listeners[name] = address
    return listeners


# --- the documented table -----------------------------------------------------------------------------


def _documentation() -> Path:
    """docs/operations.md, whose Docker Compose section describes the deployment."""
    return DOCUMENTATION


def _section_lines(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    stripped = [line.strip() for line in lines]
    assert HEADING in stripped, f"{path.relative_to(ROOT)} has no {HEADING!r} heading"
    start = stripped.index(HEADING) + 1
    section: list[str] = []
    for line in stripped[start:]:
        if re.match(r"#{1,2} ", line):  # the next section of the same or a higher level
            break
        section.append(line)
    return section


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _items(cell: str) -> set[str]:
    """A cell listing several values, separated by <br> or commas, each maybe in backticks."""
    parts = re.split(r"<br\s*/?>|,", cell)
    return {part.strip().strip("`").strip() for part in parts} - EMPTY_CELL


def _table() -> dict[str, dict[str, str]]:
    """The service table of the section as {service: {column: cell}}."""
    path = _documentation()
    where = path.relative_to(ROOT)
    table_lines: list[str] = []
    for line in _section_lines(path):
        if line.startswith("|"):
            table_lines.append(line)
        elif table_lines:
            break  # only the first table of the section
    assert len(table_lines) >= 2, f"{where}: no Markdown table under {HEADING!r}"
    header, separator, *rows = table_lines
    assert _cells(header) == TABLE_HEADER, f"{where}: the table's columns should be {TABLE_HEADER}"
    assert re.fullmatch(r"[|:\-\s]+", separator), f"{where}: the table's second line should be its separator"

    table: dict[str, dict[str, str]] = {}
    for row in rows:
        cells = _cells(row)
        assert len(cells) == len(TABLE_HEADER), f"{where}: row {row!r} should have {len(TABLE_HEADER)} cells"
        match = re.fullmatch(r"`([^`]+)`", cells[0])
        assert match, f"{where}: the service name in {row!r} should be in backticks"
        service = match.group(1)
        assert service not in table, f"{where}: service {service!r} has two rows"
        table[service] = dict(zip(TABLE_HEADER, cells, strict=True))
    return table


# --- the tests -----------------------------------------------------------------------------------------


def test_it_is_valid_for_a_real_compose_implementation() -> None:
    run = _config_run()

    assert run.returncode == 0, f"`docker-compose config` rejected docker-compose.yml:\n{run.stderr}{run.stdout}"
    assert "version" not in yaml.safe_load(COMPOSE_FILE.read_text()), (
        "docker-compose.yml follows the Compose specification, which has no top-level `version:`"
    )


def test_it_refuses_to_start_without_a_secret_key() -> None:
    environ = {key: value for key, value in os.environ.items() if key != "KAZAMI_SECRET_KEY"}

    run = _run_config(environ)

    assert run.returncode != 0, "Compose should refuse docker-compose.yml while KAZAMI_SECRET_KEY is unset"
    assert "KAZAMI_SECRET_KEY" in run.stderr + run.stdout


def test_it_describes_exactly_the_expected_services() -> None:
    assert set(_services()) == EXPECTED_SERVICES


def test_each_broker_has_its_own_id_and_advertises_the_port_it_publishes() -> None:
    services = _services()
    broker_ids: dict[str, str] = {}
    for name in BROKERS:
        env = _environment(services[name])
        broker_ids[name] = env["KAFKA_BROKER_ID"]
        advertised = _listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        internal = advertised[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
        external = [address for listener, address in advertised.items() if address != internal]

        assert internal.partition(":")[0] == name, f"{name} should advertise its service name to other containers"
        assert "zookeeper" in _depends_on(services[name])
        assert len(external) == 1, f"{name} should advertise one listener for the host"
        host, _, port = external[0].partition(":")
        assert {f"{host}:{port}:{port}"} == _published_ports(services[name]), (
            f"{name} should publish exactly the port it advertises to the host ({external[0]})"
        )

    assert sorted(broker_ids.values()) == ["0", "1", "2"], f"broker ids should be 0, 1 and 2: {broker_ids}"


def test_the_console_publishes_8888_and_reaches_the_brokers_redis_and_postgres() -> None:
    services = _services()
    console = services["console"]
    env = _environment(console)
    internal_brokers = set()
    for name in BROKERS:
        broker_env = _environment(services[name])
        advertised = _listeners(broker_env["KAFKA_ADVERTISED_LISTENERS"])
        internal_brokers.add(advertised[broker_env["KAFKA_INTER_BROKER_LISTENER_NAME"]])
    redis = urlparse(env["REDIS_URL"])
    database = urlparse(env["DATABASE_URL"])
    postgres_env = _environment(services["postgres"])

    assert "127.0.0.1:8888:8888" in _published_ports(console)
    assert set(env["KAFKA_BOOTSTRAP_SERVERS"].split(",")) == internal_brokers
    assert env["ZOOKEEPER_CONNECT"] == "zookeeper:2181"
    assert (redis.scheme, redis.hostname, redis.port) == ("redis", "redis", 6379)
    assert (database.scheme, database.hostname, database.port) == ("postgres", "postgres", 5432)
    assert (database.username, database.password, database.path.lstrip("/")) == (
        postgres_env["POSTGRES_USER"],
        postgres_env["POSTGRES_PASSWORD"],
        postgres_env["POSTGRES_DB"],
    )
    assert urlparse(env["KAZAMI_SPARK_MASTER"]).hostname == "spark-master"
    assert env["KAZAMI_SPARK_DRIVER_HOST"] == "console"  # what the Spark executors dial back
    assert env["KAZAMI_SECRET_KEY"] == DUMMY_SECRET_KEY, "the secret key should come from the host environment"
    assert {*BROKERS, "redis", "postgres"} <= _depends_on(console)


def test_the_console_reads_the_schema_registry_which_keeps_its_schemas_in_postgres() -> None:
    services = _services()
    console_env = _environment(services["console"])
    registry = services["schema-registry"]
    registry_env = _environment(registry)
    postgres_env = _environment(services["postgres"])
    url = urlparse(console_env["SCHEMA_REGISTRY_URL"])
    jdbc = urlparse(registry_env["APICURIO_DATASOURCE_URL"].removeprefix("jdbc:"))
    published = {spec.rsplit(":", 1)[1]: spec for spec in _published_ports(registry)}

    assert (url.scheme, url.hostname, url.path) == ("http", "schema-registry", "/apis/ccompat/v7")
    assert str(url.port) in published, "the registry should publish the port the console reads (to the host)"
    assert all(spec.startswith("127.0.0.1:") for spec in published.values())
    assert "schema-registry" in _depends_on(services["console"])
    assert registry_env["APICURIO_STORAGE_KIND"] == "sql"
    assert (jdbc.scheme, jdbc.hostname, jdbc.port, jdbc.path.lstrip("/")) == (
        "postgresql",
        "postgres",
        5432,
        postgres_env["POSTGRES_DB"],
    )
    assert (registry_env["APICURIO_DATASOURCE_USERNAME"], registry_env["APICURIO_DATASOURCE_PASSWORD"]) == (
        postgres_env["POSTGRES_USER"],
        postgres_env["POSTGRES_PASSWORD"],
    )
    assert registry_env["APICURIO_RULES_GLOBAL_COMPATIBILITY"] == "BACKWARD"
    assert "postgres" in _depends_on(registry)


def test_documented_table_matches_services_ports_and_volumes() -> None:
    services = _services()
    table = _table()

    assert set(table) == set(services), f"services in the table of {_documentation().relative_to(ROOT)}"
    assert {name: _items(row["Ports"]) for name, row in table.items()} == {
        name: _published_ports(service) for name, service in services.items()
    }
    assert {name: _items(row["Volumes"]) for name, row in table.items()} == {
        name: _named_volumes(service) for name, service in services.items()
    }


def test_documented_table_names_the_image_of_each_service() -> None:
    services = _services()
    table = _table()

    for name, service in services.items():
        if name not in table:
            continue  # reported by the test of the services, ports and volumes
        cell = table[name]["Image"]
        if "image" in service:
            assert _items(cell) == {service["image"]}, f"image of {name!r} in the table"
        else:
            assert "Dockerfile" in cell, f"{name!r} is built: its Image cell should say from which Dockerfile"


def test_mounted_named_volumes_are_declared_at_top_level() -> None:
    config = _config()
    declared = set(config.get("volumes") or {})
    mounted = {volume for service in config["services"].values() for volume in _named_volumes(service)}

    assert mounted <= declared, f"mounted but not declared under top-level volumes: {sorted(mounted - declared)}"
    assert declared <= mounted, f"declared but mounted by no service: {sorted(declared - mounted)}"


def _options(command: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """spark-submit's ``--flag value`` pairs and its ``--conf key=value`` settings."""
    flags: dict[str, str] = {}
    conf: dict[str, str] = {}
    for flag, value in zip(command[1::2], command[2::2], strict=False):
        if flag == "--conf":
            key, _, setting = value.partition("=")
            conf[key] = setting
        else:
            flags[flag] = value
    return flags, conf


def test_the_console_runs_its_jobs_in_the_spark_connect_server_on_the_spark_cluster() -> None:
    from importlib.metadata import version

    services = _services()
    connect = services["spark-connect"]
    command = [str(part) for part in connect["command"]]
    flags, conf = _options(command)
    console_env = _environment(services["console"])
    remote = urlparse(console_env["KAZAMI_SPARK_REMOTE"])
    spark_version = version("pyspark")

    assert command[0].endswith("/spark-submit")
    assert flags["--class"] == CONNECT_SERVER_CLASS
    assert connect["image"] == services["spark-master"]["image"] == f"apache/spark:{spark_version}"
    assert flags["--master"] == _environment(services["console"])["KAZAMI_SPARK_MASTER"] == "spark://spark-master:7077"
    assert {"spark-master", "spark-worker"} <= _depends_on(connect)
    # The connectors the jobs use (analytics/pom.xml), in PySpark's version.
    pom = (ROOT / "analytics" / "pom.xml").read_text()
    packages = flags["--packages"].split(",")
    assert {p.rsplit(":", 1)[1] for p in packages} == {spark_version}
    assert {p.split(":")[1] for p in packages} == {"spark-sql-kafka-0-10_2.13", "spark-avro_2.13"}
    assert "spark-sql-kafka-0-10_2.13" in pom
    # Executors on spark-worker dial the driver back by its service name.
    assert conf["spark.driver.host"] == "spark-connect"
    # The console reaches it inside the network; nothing publishes its port to the host.
    assert (remote.scheme, remote.hostname, remote.port) == ("sc", "spark-connect", 15002)
    assert conf["spark.connect.grpc.binding.port"] == "15002"
    assert "15002" in {str(port).split("/")[0] for port in connect.get("expose", [])}
    assert all(not spec.endswith(":15002") for service in services.values() for spec in _published_ports(service))
    # No token: PySpark's client sends one only over TLS unless the host is "localhost" (a token here would make it
    # ask for TLS, which the server does not speak); the documentation says why the network is the boundary.
    assert "token" not in console_env["KAZAMI_SPARK_REMOTE"]
    assert "spark-connect:15002" in " ".join(_section_lines(_documentation()))
    assert "spark-connect" in _depends_on(services["console"])
    # Its web UI, linked from each job, on loopback.
    assert console_env["KAZAMI_SPARK_UI_URL"] == "http://127.0.0.1:4040"
    assert f"127.0.0.1:4040:{conf['spark.ui.port']}" in _published_ports(connect)


def test_the_spark_connect_server_runs_with_the_jobs_settings() -> None:
    from analytics.spark import SparkSettings, spark_conf

    _, conf = _options([str(part) for part in _services()["spark-connect"]["command"]])
    expected = spark_conf(SparkSettings())
    # Where it runs, its memory (--driver-memory) and jars (--packages) are its own; every other setting is the jobs'.
    shared = {k: v for k, v in expected.items() if k not in ("spark.jars", "spark.driver.memory", "spark.ui.enabled")}

    assert {k: conf.get(k) for k in shared} == shared
    assert conf["spark.scheduler.mode"] == "FAIR"


def test_an_application_gets_a_share_of_the_spark_worker_not_all_of_it() -> None:
    master_env = _environment(_services()["spark-master"])

    # The Spark Connect server keeps its executors: with every core, the live query's Spark would never get one.
    assert "-Dspark.deploy.defaultCores=" in master_env.get("SPARK_MASTER_OPTS", "")
