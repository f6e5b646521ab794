"""The console's changes to topics, as the pages and the API both make them: create, add partitions, change
configs, delete records, delete; checked, run and audited through console.access.perform."""

from __future__ import annotations

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.topics.changes import (
    do_add_partitions,
    do_alter_topic_configs,
    do_create_topic,
    do_delete_records,
    do_delete_topic,
)
from console.access import perform
from console.forms import CreateTopicForm


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
