"""The console's changes to consumer groups, as the pages and the API both make them: reset offsets, delete a
group, delete a group's offsets of a topic; checked, run and audited through console.access.perform."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.groups.changes import ResetResult, do_delete_group, do_delete_offsets, do_reset_offsets
from broker.groups.resets import ResetSpec
from console.access import perform


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
