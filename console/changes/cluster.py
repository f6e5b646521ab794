"""The console's changes to the cluster's brokers, as the pages and the API both make them: their dynamic
configs (one broker's, or the cluster default), and stopping or starting a broker of the embedded cluster
(console.changes.embedded); checked, run and audited through console.access.perform."""

from __future__ import annotations

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.cluster import broker_configs
from console.access import perform
from console.changes import embedded


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
    perform(
        request,
        "broker.configs",
        cluster,
        "cluster default" if broker is None else f"broker {broker}",
        {"set": set_configs, "delete": delete},
        lambda: broker_configs.do_alter_broker_configs(conn, broker, set_configs, delete),
        lambda _: "validated by Kafka and applied",
    )


def broker_stop_start(request: HttpRequest, cluster: str, broker: int, action: str) -> str:
    """Stop or start a broker of the embedded cluster (admins): "stopping" or "starting", in the background."""
    return perform(
        request,
        "broker.stop_start",
        cluster,
        str(broker),
        {"action": action},
        lambda: embedded.change(cluster, broker, action),
        lambda state: state,
    )
