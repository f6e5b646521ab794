"""Every change the console makes to Kafka Connect, as the pages and the API both make it: checked, run and
audited through console.access.perform. The audit keeps configs with secret-looking values masked (the
worker's own masking rules, broker.connect.connectors.mask_config) on top of perform's own masking of keys.

A config that anyone but an admin sends (create, config update, validation) is first held against the
console's Connect policy (broker/connect/policy.py, settings from console/config/connect.py): the config
exactly as it would reach the worker (an update's masked values put back first), before any of it does. A
refusal is audited as ``refused`` and raises ConnectPolicyRefused (403 ``connect_policy``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.http import HttpRequest

from broker.connect import connectors as connect
from broker.connect import policy
from broker.connect.connectors import ConnectClient
from broker.errors import KazamiError
from broker.messages.masking import rules_for
from broker.topics.read import get_topics
from console.access import ADMIN, perform, record, require, role_of
from console.config.clusters import get_connection
from console.config.connect import connect_policy
from console.present.masking import get_rules

T = TypeVar("T")


def _target(client: ConnectClient, name: str) -> str:
    return f"{client.config.name}/{name}"


def is_policed(request: HttpRequest) -> bool:
    """Whether the user's configs are held against the Connect policy: everyone but admins."""
    return role_of(request.user) != ADMIN


def police(request: HttpRequest, cluster: str, client: ConnectClient, config: Mapping[str, str]) -> None:
    """Hold ``config`` against the Connect policy unless the user is an admin; raises ConnectPolicyRefused.
    The worker's plugin list (one request) resolves an alias in connector.class."""
    if not is_policed(request):
        return
    rules = connect_policy(cluster, client.config.name)
    plugins = {p["class"]: p["type"] for p in connect.list_plugins(client, connectors_only=True)}
    role = role_of(request.user)
    masking = get_rules(cluster)

    def masked(topic: str) -> bool:
        return bool(rules_for(masking, cluster, topic, role))

    def existing() -> list[str]:
        return [t.name for t in get_topics(get_connection(cluster), include_internal=True)]

    policy.check_connector_config(config, rules, plugins, masked=masked if masking else None, existing=existing)


def _checked(
    request: HttpRequest,
    action: str,
    cluster: str,
    target: str,
    params: dict[str, Any],
    client: ConnectClient,
    prepare: Callable[[], dict[str, str]],
    run: Callable[[dict[str, str]], T],
    describe: Callable[[T], str],
) -> T:
    """The role check, then ``prepare()`` (the config as it would reach the worker), the policy on it, and
    ``perform`` running ``run(config)``. Each refusal and failure is audited once."""
    try:
        require(request, action, cluster)
    except KazamiError as exc:
        record(request, action, cluster, target, params, "refused", str(exc))
        raise
    try:
        config = prepare()
        police(request, cluster, client, config)
    except policy.ConnectPolicyRefused as exc:
        record(request, action, cluster, target, params, "refused", str(exc))
        raise
    except KazamiError as exc:
        record(request, action, cluster, target, params, "failed", str(exc))
        raise
    return perform(request, action, cluster, target, params, lambda: run(config), describe)


def create(
    request: HttpRequest, cluster: str, client: ConnectClient, name: str, config: dict[str, Any]
) -> connect.Connector:
    """Validate with the worker and create the connector (operators; the policy first)."""
    return _checked(
        request,
        "connect.create",
        cluster,
        _target(client, name),
        {"config": connect.mask_config({str(k): v for k, v in config.items()})},
        client,
        lambda: {**connect.check_config(config), "name": connect.check_name(name)},
        lambda checked: connect.do_create(client, name, checked),
        lambda _: "validated by the worker and created",
    )


def update_config(request: HttpRequest, cluster: str, client: ConnectClient, name: str, config: dict[str, Any]) -> None:
    """Validate and apply a new config (operators; the policy first, on the config with its masked values
    put back: what the worker would get)."""
    _checked(
        request,
        "connect.config",
        cluster,
        _target(client, name),
        {"config": connect.mask_config({str(k): v for k, v in config.items()})},
        client,
        lambda: connect.merged_config(client, name, config),
        lambda merged: connect.do_replace_config(client, name, merged),
        lambda _: "validated by the worker and applied",
    )


def validate(request: HttpRequest, cluster: str, client: ConnectClient, config: Any) -> dict[str, list[str]]:
    """The worker's reasons per field (changes nothing). A config the policy refuses never reaches the worker
    (its validation loads the class and may connect): the refusal is audited as ``connect.validate``."""
    checked = connect.check_config(config)
    try:
        police(request, cluster, client, checked)
    except policy.ConnectPolicyRefused as exc:
        target = _target(client, str(checked.get("name") or checked["connector.class"]))
        record(
            request, "connect.validate", cluster, target, {"config": connect.mask_config(checked)}, "refused", str(exc)
        )
        raise
    return connect.validate(client, checked)


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
