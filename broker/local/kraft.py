"""KRaft mode's own steps: the cluster id, formatting each node's storage once, and the quorum as the
cluster reports it (what ZooKeeper's ``/brokers/ids`` and ``/controller`` tell in ZooKeeper mode)."""

from __future__ import annotations

import base64
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any

from broker.local.configs import logging_flag
from broker.local.layout import ClusterLayout, LauncherError


def new_cluster_id() -> str:
    """A Kafka cluster id as ``kafka-storage random-uuid`` makes one (16 random bytes, URL-safe base64
    without padding, never starting with '-'), without starting a JVM for it."""
    while True:
        found = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def formatted(layout: ClusterLayout, node_id: int) -> bool:
    return (layout.log_dir(node_id) / "meta.properties").exists()


def format_storage(layout: ClusterLayout, java: str, node_ids: list[int]) -> None:
    """Format the storage of ``node_ids`` that are not formatted yet (``kafka-storage format``: the
    meta.properties with the cluster id and node id, and the bootstrap metadata with the release's
    latest ``metadata.version`` and features), the nodes in parallel. Raises LauncherError with the
    tool's output when it fails."""
    assert layout.cluster_id is not None
    config = layout.root / "config"
    log_dir = layout.root / "logs" / "format"
    log_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for n in node_ids:
        if formatted(layout, n):
            continue
        cmd = [
            java,
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dkafka.logs.dir={log_dir}",
            logging_flag(layout),
            "-cp",
            layout.release.classpath,
            layout.release.tool("StorageTool"),
            "format",
            "--cluster-id",
            layout.cluster_id,
            "--config",
            str(config / f"server-{n}.properties"),
        ]
        runs.append((n, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for n, proc in runs:
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            tail = " | ".join(out.strip().splitlines()[-5:])
            raise LauncherError(f"kafka-storage format failed for node {n}: {tail}")


@dataclass(frozen=True)
class QuorumView:
    """The cluster as its brokers report it: brokers that are registered and unfenced, the quorum's
    leader (the active controller) or None while there is none, and when each voter last caught up
    with the leader (epoch milliseconds, -1 never)."""

    brokers: frozenset[int]
    leader: int | None
    caught_up: dict[int, int] = field(default_factory=dict)


def quorum_view(layout: ClusterLayout, timeout_ms: int = 3000) -> QuorumView | None:
    """The unfenced brokers (DescribeCluster) and the active controller (DescribeQuorum's leader: on KRaft,
    DescribeCluster's ``controller_id`` answered by a broker is any broker, not the controller), asked of
    the brokers; None when none answers."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=layout.bootstrap_servers.split(","),
            bootstrap_timeout_ms=timeout_ms,
            request_timeout_ms=timeout_ms,
        )
    except Exception:  # noqa: BLE001 - no broker answers yet
        return None
    try:
        cluster = admin.describe_cluster()
        brokers = frozenset(b["broker_id"] for b in cluster["brokers"] if not b.get("is_fenced"))
        try:
            quorum = admin.describe_metadata_quorum()
        except Exception:  # noqa: BLE001 - no leader yet, or the broker cannot reach the controllers
            return QuorumView(brokers, None)
        return QuorumView(brokers, _leader_id(quorum), _caught_up(quorum))
    except Exception:  # noqa: BLE001 - the cluster is still forming
        return None
    finally:
        admin.close()


def _leader_id(quorum: dict[str, Any]) -> int | None:
    """The leader's id from kafka-python's DescribeQuorum answer for ``__cluster_metadata``; -1 means none."""
    for topic in quorum.get("topics", []):
        for partition in topic.get("partitions", []):
            leader = partition.get("leader_id")
            return None if leader is None or leader < 0 else int(leader)
    return None


def _caught_up(quorum: dict[str, Any]) -> dict[int, int]:
    return {
        int(voter["replica_id"]): int(voter.get("last_caught_up_timestamp") or -1)
        for topic in quorum.get("topics", [])
        for partition in topic.get("partitions", [])
        for voter in partition.get("current_voters", [])
    }
