"""Every change the console makes, as the page and the API both make it: checked, run and audited
through console.access.perform, with what the audit log keeps of its parameters and result.

This module holds the changes to Kafka itself (topics, records, groups, configs, quotas, reassignments,
transactions) and to ZooKeeper; ``console.changes.acls`` those to ACLs and SCRAM users,
``console.changes.connect`` those to Kafka Connect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.groups.changes import ResetResult, do_delete_group, do_delete_offsets, do_reset_offsets
from broker.groups.resets import ResetSpec
from broker.messages import transactions
from broker.messages.produce import Produced, do_produce
from broker.replication import reassign as reassignment
from broker.security import quotas
from broker.topics.changes import (
    do_add_partitions,
    do_alter_topic_configs,
    do_create_topic,
    do_delete_records,
    do_delete_topic,
)
from broker.zk import writes as zk_writes
from broker.zk.nodes import ZStat
from console.access import perform, record, require
from console.forms import CreateTopicForm, ProduceForm

T = TypeVar("T")


def create_topic(request: HttpRequest, conn: ClusterConnection, cluster: str, form: CreateTopicForm) -> None:
    data, configs = form.cleaned_data, form.topic_configs()
    params = {"partitions": data["partitions"], "replication_factor": data["replication_factor"], **configs}
    perform(
        request,
        "topic.create",
        cluster,
        data["name"],
        params,
        lambda: do_create_topic(conn, data["name"], data["partitions"], data["replication_factor"], configs),
    )


def add_partitions(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, total: int) -> None:
    perform(
        request,
        "topic.add_partitions",
        cluster,
        topic,
        {"total": total},
        lambda: do_add_partitions(conn, topic, total),
    )


def alter_configs(
    request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, chosen: dict[str, str], reset: list[str]
) -> None:
    perform(
        request,
        "topic.configs",
        cluster,
        topic,
        {"set": chosen, "reset": reset},
        lambda: do_alter_topic_configs(conn, topic, chosen, reset),
    )


def delete_records(
    request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, plan: dict[int, int]
) -> dict[int, int]:
    return perform(
        request,
        "topic.delete_records",
        cluster,
        topic,
        {"before_offsets": {str(p): o for p, o in sorted(plan.items())}},
        lambda: do_delete_records(conn, topic, plan),
    )


def delete_topic(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str) -> None:
    perform(request, "topic.delete", cluster, topic, {}, lambda: do_delete_topic(conn, topic))


def produce(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, form: ProduceForm) -> Produced:
    data = form.cleaned_data
    return perform(
        request,
        "message.produce",
        cluster,
        topic,
        form.audit_params(),
        lambda: do_produce(
            conn, topic, data["key_bytes"], data["value_bytes"], data["header_list"], data.get("partition")
        ),
        lambda done: f"written to partition {done.partition} at offset {done.offset}",
    )


def reset_offsets(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    group: str,
    chosen: list[str] | None,
    spec: ResetSpec,
    value: Any,
) -> ResetResult:
    return perform(
        request,
        "group.reset_offsets",
        cluster,
        group,
        {"strategy": spec.strategy, "value": value, "topics": chosen or "every consumed topic"},
        lambda: do_reset_offsets(conn, group, chosen, spec, dry_run=False),
        lambda result: f"{len(result.planned)} partitions reset",
    )


def delete_group(request: HttpRequest, conn: ClusterConnection, cluster: str, group: str) -> None:
    perform(request, "group.delete", cluster, group, {}, lambda: do_delete_group(conn, group))


def delete_offsets(request: HttpRequest, conn: ClusterConnection, cluster: str, group: str, topic: str) -> int:
    return perform(
        request,
        "group.delete_offsets",
        cluster,
        group,
        {"topic": topic},
        lambda: do_delete_offsets(conn, group, topic),
        lambda count: f"offsets of {count} partitions deleted",
    )


def reassign(
    request: HttpRequest, conn: ClusterConnection, cluster: str, plan: reassignment.Plan, throttle: int | None
) -> reassignment.Progress:
    topics = sorted({t for t, _ in plan})
    params = {"plan": reassignment.plan_json(plan), "throttle": throttle}
    return perform(
        request,
        "partitions.reassign",
        cluster,
        ",".join(topics),
        params,
        lambda: reassignment.execute(conn, plan, throttle),
        lambda _: f"{len(plan)} partitions moving" + (f", throttled to {throttle} B/s" if throttle else ""),
    )


def verify_reassignment(
    request: HttpRequest, conn: ClusterConnection, cluster: str, topics: list[str]
) -> reassignment.Progress:
    return perform(
        request,
        "partitions.reassign",
        cluster,
        ",".join(topics),
        {"verify": True},
        lambda: reassignment.verify(conn, topics),
        lambda p: "done, throttle removed" if p.done else f"{len(p.ongoing)} partitions still moving",
    )


def cancel_reassignment(
    request: HttpRequest, conn: ClusterConnection, cluster: str, partitions: list[tuple[str, int]]
) -> reassignment.Progress:
    return perform(
        request,
        "partitions.reassign",
        cluster,
        ",".join(f"{t}-{p}" for t, p in partitions) or "every reassignment",
        {"cancel": True},
        lambda: reassignment.cancel(conn, partitions),
    )


def elect(
    request: HttpRequest, conn: ClusterConnection, cluster: str, kind: str, partitions: list[tuple[str, int]] | None
) -> dict[str, str | None]:
    return perform(
        request,
        "partitions.elect",
        cluster,
        ",".join(f"{t}-{p}" for t, p in partitions or []) or "every partition",
        {"type": kind},
        lambda: reassignment.elect(conn, kind, partitions),
        lambda r: f"{sum(1 for v in r.values() if v is None)} of {len(r)} partitions elected",
    )


def broker_stop_start(request: HttpRequest, cluster: str, broker: int, action: str) -> str:
    from console.changes import embedded

    return perform(
        request,
        "broker.stop_start",
        cluster,
        str(broker),
        {"action": action},
        lambda: embedded.change(cluster, broker, action),
        lambda state: state,
    )


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


def alter_quotas(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    entity: quotas.Entity,
    set_values: dict[str, Any],
    remove: list[str],
) -> quotas.ClientQuota:
    """Set and remove client quotas of one entity (admins); a refused value is audited as failed."""
    return perform(
        request,
        "quotas.change",
        cluster,
        quotas.describe_entity(entity),
        {"entity": dict(entity), "set": set_values, "remove": remove},
        lambda: quotas.do_alter_quotas(conn, entity, set_values, remove),
        lambda _: ", ".join([*(f"{k} = {v}" for k, v in set_values.items()), *(f"{k} removed" for k in remove)]),
    )


def alter_broker_configs(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    broker: int | None,
    set_configs: dict[str, str],
    delete: list[str],
) -> None:
    """Change dynamic broker configs of ``broker`` (None: the cluster default); secret-looking values are
    hidden in the audit log."""
    from broker.cluster import broker_configs

    perform(
        request,
        "broker.configs",
        cluster,
        "cluster default" if broker is None else f"broker {broker}",
        {"set": set_configs, "delete": delete},
        lambda: broker_configs.do_alter_broker_configs(conn, broker, set_configs, delete),
        lambda _: "validated by Kafka and applied",
    )


def abort_transaction(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> transactions.Aborted:
    params = {
        "partition": partition,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "coordinator_epoch": coordinator_epoch,
    }
    return perform(
        request,
        "transactions.abort",
        cluster,
        f"{topic}-{partition}",
        params,
        lambda: transactions.do_abort(conn, topic, partition, producer_id, producer_epoch, coordinator_epoch),
        lambda done: f"aborted; last stable offset {done.last_stable_offset} of {done.high_watermark}",
    )
