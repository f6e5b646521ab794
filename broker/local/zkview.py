"""The cluster as ZooKeeper tells it in ZooKeeper mode: registered brokers and the controller (KRaft mode asks
the cluster instead: kraft.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from broker.local.jvm import zookeeper_serving
from broker.local.layout import ClusterLayout


@contextmanager
def _zookeeper(layout: ClusterLayout) -> Iterator[KazooClient | None]:
    """A short-lived ZooKeeper session, or None when ZooKeeper does not answer."""
    if not zookeeper_serving(layout.zookeeper_port):
        yield None
        return
    zk = KazooClient(hosts=layout.zookeeper_connect, timeout=3.0, connection_retry={"max_tries": 1})
    try:
        zk.start(timeout=3.0)
    except KazooTimeoutError:
        yield None
        return
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def registrations(layout: ClusterLayout) -> tuple[dict[int, float], int | None]:
    """({broker id: registration time in epoch seconds}, controller id or None) as ZooKeeper has them;
    empty when ZooKeeper is down."""
    with _zookeeper(layout) as zk:
        if zk is None:
            return {}, None
        found: dict[int, float] = {}
        try:
            for child in zk.get_children("/brokers/ids"):
                try:
                    _, stat = zk.get(f"/brokers/ids/{child}")
                    found[int(child)] = stat.ctime / 1000
                except NoNodeError:
                    continue
        except NoNodeError:
            pass
        try:
            raw, _ = zk.get("/controller")
            controller: int | None = int(json.loads(raw)["brokerid"])
        except NoNodeError:
            controller = None
        return found, controller


def registered_brokers(layout: ClusterLayout) -> tuple[set[int], int | None]:
    """(broker ids registered in ZooKeeper, controller id or None); empty when ZooKeeper is down."""
    found, controller = registrations(layout)
    return set(found), controller


def clear_stale_registrations(layout: ClusterLayout, broker_ids: list[int]) -> None:
    """Delete the registrations of our brokers that are not running.

    A ZooKeeper restarted from its snapshot keeps the ephemeral nodes of the sessions it
    knew until they expire; a broker starting meanwhile fails with NodeExists. The ids are
    this cluster's own and their processes are gone, so those nodes are stale by definition.
    """
    with _zookeeper(layout) as zk:
        if zk is None:
            return
        for b in broker_ids:
            with suppress(NoNodeError):
                zk.delete(f"/brokers/ids/{b}")
        try:
            raw, _ = zk.get("/controller")
            if int(json.loads(raw)["brokerid"]) in broker_ids:
                zk.delete("/controller")
        except NoNodeError:
            pass
