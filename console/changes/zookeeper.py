"""The console's changes to ZooKeeper, as the znode page and the API both make them: create, set and delete a
znode, where the cluster's ``zookeeper_writes`` setting allows it; checked, run and audited through
console.access.perform, with the data's size in the audit log, never the data (domain in broker/zk/writes.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.zk import writes as zk_writes
from broker.zk.nodes import ZStat
from console.access import perform, record, require

T = TypeVar("T")


def _zookeeper_change(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    action: str,
    path: str,
    params: dict[str, Any],
    change: Callable[[], T],
    describe: Callable[[T], str],
    check: Callable[[], object],
) -> T:
    """``perform`` for a change of ZooKeeper: a cluster whose ZooKeeper writes are off refuses it as a
    read-only one does, after the role is checked, and so does ``check()`` for a znode Kafka depends on
    (each audited as refused). The audit keeps the data's size, not the data (a znode may hold credentials)."""
    try:
        require(request, action, cluster)
        zk_writes.check_writes(conn.config)
        check()
    except KazamiError as exc:
        record(request, action, cluster, path, params, "refused", str(exc))
        raise
    # perform checks the role again (cheap) and audits the outcome of the change.
    return perform(request, action, cluster, path, params, change, describe)


def create_znode(request: HttpRequest, conn: ClusterConnection, cluster: str, path: str, data: bytes) -> ZStat:
    return _zookeeper_change(
        request,
        conn,
        cluster,
        "zookeeper.create",
        path,
        {"data_length": len(data)},
        lambda: zk_writes.create_node(conn, path, data),
        lambda stat: f"created with {stat.data_length} bytes",
        lambda: zk_writes.check_change(path, creating=True),
    )


def set_znode(
    request: HttpRequest, conn: ClusterConnection, cluster: str, path: str, data: bytes, version: int
) -> ZStat:
    return _zookeeper_change(
        request,
        conn,
        cluster,
        "zookeeper.set",
        path,
        {"data_length": len(data), "version": version},
        lambda: zk_writes.set_node(conn, path, data, version),
        lambda stat: f"{stat.data_length} bytes, version {version} -> {stat.version}",
        lambda: zk_writes.check_change(path, creating=False),
    )


def delete_znode(
    request: HttpRequest, conn: ClusterConnection, cluster: str, path: str, version: int, recursive: bool
) -> zk_writes.Deleted:
    return _zookeeper_change(
        request,
        conn,
        cluster,
        "zookeeper.delete",
        path,
        {"version": version, "recursive": recursive},
        lambda: zk_writes.delete_node(conn, path, version, recursive),
        lambda deleted: f"{deleted.count} znode{'s' if deleted.count != 1 else ''} deleted",
        lambda: zk_writes.check_delete(path),
    )


def check_zookeeper_change(request: HttpRequest, conn: ClusterConnection, cluster: str, action: str, path: str) -> None:
    """Raise Forbidden, ReadOnlyCluster or ZooKeeperWritesOff unless ``request``'s user may make the change
    ``action`` to the cluster's ZooKeeper now; a refused POST goes into the audit log."""
    try:
        require(request, action, cluster)
        zk_writes.check_writes(conn.config)
    except KazamiError as exc:
        if request.method == "POST":
            record(request, action, cluster, path, {}, "refused", str(exc))
        raise
