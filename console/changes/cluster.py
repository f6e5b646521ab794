"""The console's changes to the cluster's brokers, as the pages and the API both make them: their dynamic
configs (one broker's, or the cluster default), and stopping or starting a broker of the embedded cluster
(console.changes.embedded); checked, run and audited through console.access.perform."""

from __future__ import annotations

from django.http import HttpRequest

from broker import redaction
from broker.client.connection import ClusterConnection
from broker.cluster import broker_configs
from broker.errors import KazamiError
from console.access import HIDDEN, perform
from console.changes import embedded


def alter_broker_configs(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    broker: int | None,
    set_configs: dict[str, str],
    delete: list[str],
) -> None:
    """Change dynamic broker configs of ``broker`` (None: the cluster default). The audit log never keeps the
    value of a secret config (broker.redaction's names: passwords, keys, JAAS, certificates Kafka treats as
    passwords), whatever the outcome: the parameters hold HIDDEN for it, and a refusal's message has the value
    taken out in case Kafka quotes it."""
    hidden = {k for k in set_configs if redaction.is_secret_name(k)}
    secrets = [str(set_configs[k]) for k in hidden if set_configs[k]]

    def change() -> None:
        try:
            broker_configs.do_alter_broker_configs(conn, broker, set_configs, delete)
        except KazamiError as exc:
            exc.args = (_without(str(exc), secrets),)
            raise

    perform(
        request,
        "broker.configs",
        cluster,
        "cluster default" if broker is None else f"broker {broker}",
        {"set": {k: HIDDEN if k in hidden else v for k, v in set_configs.items()}, "delete": delete},
        change,
        lambda _: "validated by Kafka and applied",
    )


def _without(message: str, secrets: list[str]) -> str:
    """``message`` with every one of ``secrets`` (longest first) replaced by HIDDEN."""
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, HIDDEN)
    return message


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
