"""Every change the console makes to Kafka Connect, as the pages and the API both make it: checked, run and
audited through console.access.perform. The audit keeps configs with secret-looking values masked (the
worker's own masking rules, broker.connect.connectors.mask_config) on top of perform's own masking of keys."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker.connect import connectors as connect
from broker.connect.connectors import ConnectClient
from console.access import perform


def _target(client: ConnectClient, name: str) -> str:
    return f"{client.config.name}/{name}"


def create(
    request: HttpRequest, cluster: str, client: ConnectClient, name: str, config: dict[str, Any]
) -> connect.Connector:
    """Validate with the worker and create the connector (operators)."""
    return perform(
        request,
        "connect.create",
        cluster,
        _target(client, name),
        {"config": connect.mask_config({str(k): v for k, v in config.items()})},
        lambda: connect.do_create(client, name, config),
        lambda _: "validated by the worker and created",
    )


def update_config(request: HttpRequest, cluster: str, client: ConnectClient, name: str, config: dict[str, Any]) -> None:
    perform(
        request,
        "connect.config",
        cluster,
        _target(client, name),
        {"config": connect.mask_config({str(k): v for k, v in config.items()})},
        lambda: connect.do_update_config(client, name, config),
        lambda _: "validated by the worker and applied",
    )


def lifecycle(request: HttpRequest, cluster: str, client: ConnectClient, name: str, action: str) -> None:
    """``pause``, ``resume``, ``stop``, ``restart`` (connector and tasks), ``restart_failed`` (only failed
    tasks, and the connector if it failed)."""
    changes = {
        "pause": lambda: connect.do_pause(client, name),
        "resume": lambda: connect.do_resume(client, name),
        "stop": lambda: connect.do_stop(client, name),
        "restart": lambda: connect.do_restart(client, name, include_tasks=True, only_failed=False),
        "restart_failed": lambda: connect.do_restart(client, name, include_tasks=True, only_failed=True),
    }
    perform(request, f"connect.{action}", cluster, _target(client, name), {}, changes[action])


def restart_task(request: HttpRequest, cluster: str, client: ConnectClient, name: str, task: int) -> None:
    perform(
        request,
        "connect.restart",
        cluster,
        _target(client, name),
        {"task": task},
        lambda: connect.do_restart_task(client, name, task),
        lambda _: f"task {task} restarted",
    )


def reset_offsets(request: HttpRequest, cluster: str, client: ConnectClient, name: str) -> str:
    return perform(
        request,
        "connect.offsets",
        cluster,
        _target(client, name),
        {"reset": True},
        lambda: connect.do_reset_offsets(client, name),
        lambda message: message,
    )


def alter_offsets(
    request: HttpRequest, cluster: str, client: ConnectClient, name: str, offsets: list[dict[str, Any]]
) -> str:
    return perform(
        request,
        "connect.offsets",
        cluster,
        _target(client, name),
        {"offsets": offsets},
        lambda: connect.do_alter_offsets(client, name, offsets),
        lambda message: message,
    )


def delete(request: HttpRequest, cluster: str, client: ConnectClient, name: str) -> None:
    perform(request, "connect.delete", cluster, _target(client, name), {}, lambda: connect.do_delete(client, name))
