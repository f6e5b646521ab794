"""Every change the console makes, as the page and the API both make it: checked, run and audited
through console.access.perform, with what the audit log keeps of its parameters and result."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker import groups, messages, topics
from broker import reassign as reassignment
from broker.connection import ClusterConnection
from broker.messages import Produced
from broker.resets import ResetSpec
from console.access import perform
from console.forms import CreateTopicForm, ProduceForm


def create_topic(request: HttpRequest, conn: ClusterConnection, cluster: str, form: CreateTopicForm) -> None:
    data, configs = form.cleaned_data, form.topic_configs()
    params = {"partitions": data["partitions"], "replication_factor": data["replication_factor"], **configs}
    perform(
        request,
        "topic.create",
        cluster,
        data["name"],
        params,
        lambda: topics.do_create_topic(conn, data["name"], data["partitions"], data["replication_factor"], configs),
    )


def add_partitions(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, total: int) -> None:
    perform(
        request,
        "topic.add_partitions",
        cluster,
        topic,
        {"total": total},
        lambda: topics.do_add_partitions(conn, topic, total),
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
        lambda: topics.do_alter_topic_configs(conn, topic, chosen, reset),
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
        lambda: topics.do_delete_records(conn, topic, plan),
    )


def delete_topic(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str) -> None:
    perform(request, "topic.delete", cluster, topic, {}, lambda: topics.do_delete_topic(conn, topic))


def produce(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, form: ProduceForm) -> Produced:
    data = form.cleaned_data
    return perform(
        request,
        "message.produce",
        cluster,
        topic,
        form.audit_params(),
        lambda: messages.do_produce(
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
) -> groups.ResetResult:
    return perform(
        request,
        "group.reset_offsets",
        cluster,
        group,
        {"strategy": spec.strategy, "value": value, "topics": chosen or "every consumed topic"},
        lambda: groups.do_reset_offsets(conn, group, chosen, spec, dry_run=False),
        lambda result: f"{len(result.planned)} partitions reset",
    )


def delete_group(request: HttpRequest, conn: ClusterConnection, cluster: str, group: str) -> None:
    perform(request, "group.delete", cluster, group, {}, lambda: groups.do_delete_group(conn, group))


def delete_offsets(request: HttpRequest, conn: ClusterConnection, cluster: str, group: str, topic: str) -> int:
    return perform(
        request,
        "group.delete_offsets",
        cluster,
        group,
        {"topic": topic},
        lambda: groups.do_delete_offsets(conn, group, topic),
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
    from console import embedded

    return perform(
        request,
        "broker.stop_start",
        cluster,
        str(broker),
        {"action": action},
        lambda: embedded.change(cluster, broker, action),
        lambda state: state,
    )
