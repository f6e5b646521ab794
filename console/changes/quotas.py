"""The console's changes to client quotas, as the quotas page and the API both make them: checked, run and
audited through console.access.perform (domain in broker/security/quotas.py)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.security import quotas
from console.access import perform


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
