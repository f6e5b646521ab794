"""The console's changes to where partitions live and who leads them, as the reassignment page and the API
both make them: reassign, verify (which removes the throttle), cancel, elect leaders; checked, run and audited
through console.access.perform (domain in broker/replication/reassign.py)."""

from __future__ import annotations

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.replication import reassign as reassignment
from console.access import perform


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
