"""The session's schema registry (the schema_registry fixture: Apicurio Registry from Maven Central) as the other
schema tests use it, checked with confluent-kafka's own SchemaRegistryClient as an independent client: an Avro
schema registered and read back, BACKWARD as the global compatibility (Confluent's default, set at start), an
incompatible version refused with 409, and both of its ports (API and management) listening on loopback only. And
`python -m broker.local up` starting a registry beside a cluster of its own, which `down` stops."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker.local import registry
from tests.conftest import REGISTRY_DATA, REGISTRY_PORT, REGISTRY_URL, REPO, SLOT, TEST_VAR

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "dev.kazami.test",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}],
}
# A new field without a default: readers of v2 cannot read v1's records, so BACKWARD refuses it.
ORDER_INCOMPATIBLE = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string"}]}
# The same field with a default: BACKWARD accepts it.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


@pytest.fixture
def client(schema_registry: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry, "timeout": 10})


def subject() -> str:
    return f"runtime-{uuid.uuid4().hex[:12]}-value"


def test_the_fixture_gives_the_ccompat_url_the_console_is_pointed_at(schema_registry: str) -> None:
    assert schema_registry == REGISTRY_URL
    assert schema_registry.endswith("/apis/ccompat/v7")
    assert os.environ["SCHEMA_REGISTRY_URL"] == schema_registry


def test_an_avro_schema_registered_is_read_back_by_id_and_as_the_latest_version(client: SchemaRegistryClient) -> None:
    name = subject()

    schema_id = client.register_schema(name, Schema(json.dumps(ORDER_V1), "AVRO"))
    by_id = client.get_schema(schema_id)
    latest = client.get_latest_version(name)

    assert by_id.schema_type == "AVRO"
    assert json.loads(by_id.schema_str) == ORDER_V1
    assert (latest.subject, latest.version, latest.schema_id) == (name, 1, schema_id)
    assert json.loads(latest.schema.schema_str) == ORDER_V1
    assert name in client.get_subjects()
    assert set(client.get_schema_types()) >= {"AVRO", "PROTOBUF", "JSON"}


def test_the_global_compatibility_is_backward_and_an_incompatible_version_is_refused_with_409(
    client: SchemaRegistryClient,
) -> None:
    name = subject()
    first = client.register_schema(name, Schema(json.dumps(ORDER_V1), "AVRO"))

    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(name, Schema(json.dumps(ORDER_INCOMPATIBLE), "AVRO"))
    second = client.register_schema(name, Schema(json.dumps(ORDER_V2), "AVRO"))

    assert client.get_compatibility() == "BACKWARD"
    assert refused.value.http_status_code == 409
    assert client.get_versions(name) == [1, 2]
    assert second != first
    assert json.loads(client.get_latest_version(name).schema.schema_str) == ORDER_V2


def _listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) of every TCP socket process ``pid`` listens on, read from /proc (IPv4-mapped IPv6
    addresses written as IPv4)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            address_hex, port_hex = local.split(":")
            raw = bytes.fromhex(address_hex)
            # /proc prints each 32-bit word of the address in host (little-endian) order.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            if len(words) == 16 and words[:12] == b"\0" * 10 + b"\xff\xff":
                words = words[12:]
            address = ".".join(str(b) for b in words) if len(words) == 4 else words.hex()
            found.add((address, int(port_hex, 16)))
    return found


def test_both_ports_listen_on_loopback_only(schema_registry: str) -> None:
    state = registry.RegistryState.load(REGISTRY_DATA)
    assert state is not None
    assert state.pid is not None

    listening = _listening(state.pid)

    assert listening == {("127.0.0.1", REGISTRY_PORT), ("127.0.0.1", REGISTRY_PORT + 1)}
    assert registry.ready(state)  # the management port answers /health/ready


# A one-broker cluster of this test's own, on ports no other fixture of this slot uses.
LIFECYCLE_DATA = TEST_VAR / "registry-lifecycle"
LIFECYCLE_ZOOKEEPER_PORT = 12188 + 10 * SLOT
LIFECYCLE_BASE_PORT = 19099 + 10 * SLOT
LIFECYCLE_REGISTRY_PORT = 18085 + 10 * SLOT


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "KAZAMI_EMBEDDED_REGISTRY"}  # as `make run` has it
    return subprocess.run(
        [sys.executable, "-m", "broker.local", "--data", str(LIFECYCLE_DATA), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=environ,
    )


@pytest.mark.zookeeper("it starts a ZooKeeper-mode cluster of its own")
def test_up_starts_a_registry_beside_the_cluster_and_down_stops_it() -> None:
    cli("down")
    shutil.rmtree(LIFECYCLE_DATA, ignore_errors=True)
    up = cli(
        "up",
        "--brokers",
        "1",
        "--no-connect",
        "--zookeeper-port",
        str(LIFECYCLE_ZOOKEEPER_PORT),
        "--base-port",
        str(LIFECYCLE_BASE_PORT),
        "--registry-port",
        str(LIFECYCLE_REGISTRY_PORT),
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        found = json.loads(cli("status").stdout)["registry"]
        url = cli("registry-url").stdout.strip()
        with urllib.request.urlopen(f"{url}/config", timeout=10) as answer:  # noqa: S310 - loopback
            config = json.load(answer)
    finally:
        down = cli("down")

    assert url == f"http://127.0.0.1:{LIFECYCLE_REGISTRY_PORT}/apis/ccompat/v7"
    assert (found["url"], found["alive"], found["ready"]) == (url, True, True)
    assert f"Registry     {url}" in up.stdout
    assert config == {"compatibilityLevel": "BACKWARD"}
    assert "Schema registry stopped." in down.stdout
    assert not registry.alive(found["pid"])
    assert json.loads(cli("status").stdout)["registry"]["alive"] is False
