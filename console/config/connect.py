"""The Kafka Connect clusters of each Kafka cluster, read once from the environment and the clusters file.

The default cluster's come from ``KAFKA_CONNECT_URLS``: ``name=url`` entries separated by commas (a bare URL
is named ``connect``), all with the same ``KAFKA_CONNECT_USERNAME`` / ``KAFKA_CONNECT_PASSWORD`` (basic
auth), ``KAFKA_CONNECT_SSL_CAFILE`` and ``KAFKA_CONNECT_SSL_VERIFY``. A cluster of the clusters file
(``KAZAMI_CLUSTERS_FILE``) declares its own in ``[clusters.<name>.connect.<connect-name>]`` tables with
``url``, ``username``, ``password_env`` (the environment variable holding the password, so the file holds
no secret), ``ssl_cafile``, ``ssl_verify``, ``timeout`` and ``allowed_classes``. ``KAZAMI_CONNECT_TIMEOUT`` (seconds,
default 5) is every worker's time-out unless its table sets one. Passwords are kept out of kafka-python's logs
and never shown.

The connector classes operators may run (broker/connect/policy.py) come from ``KAZAMI_CONNECT_ALLOWED_CLASSES``
(comma-separated; unset or empty: every class but Kafka's FileStream source and sink; ``*``: every class), or
for a Connect cluster of the clusters file from its table's ``allowed_classes`` (a list of strings, or one
comma-separated string), which then replaces the variable for that Connect cluster.
"""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path
from typing import Any

from broker.client.config import ConnectConfig
from broker.client.connection import keep_out_of_logs
from broker.connect.policy import ConnectPolicy
from broker.errors import ConfigError, NotFound
from console.config.clusters import get_configs
from console.config.env import env_bool, env_float

_lock = threading.Lock()
_loaded: dict[str, dict[str, ConnectConfig]] | None = None
# (cluster, connect) -> the classes its table allows; a Connect cluster not here follows the variable.
_allowed: dict[tuple[str, str], tuple[str, ...] | None] = {}


def parse_classes(raw: Any, where: str) -> tuple[str, ...] | None:
    """An allow-list of connector classes from a comma-separated string or a list of strings; None (the
    default rule) when empty. Raises ConfigError."""
    if raw is None:
        return None
    if isinstance(raw, str):
        items = raw.split(",")
    elif isinstance(raw, list) and all(isinstance(i, str) for i in raw):
        items = raw
    else:
        raise ConfigError(f"{where}: allowed_classes must be a list of class names or a comma-separated string.")
    found = tuple(i.strip() for i in items if i.strip())
    return found or None


def env_allowed_classes() -> tuple[str, ...] | None:
    return parse_classes(os.environ.get("KAZAMI_CONNECT_ALLOWED_CLASSES", ""), "KAZAMI_CONNECT_ALLOWED_CLASSES")


def from_env(timeout: float) -> dict[str, ConnectConfig]:
    """The default cluster's Connect clusters from ``KAFKA_CONNECT_*``; raises ConfigError."""
    found: dict[str, ConnectConfig] = {}
    for entry in (e.strip() for e in os.environ.get("KAFKA_CONNECT_URLS", "").split(",")):
        if not entry:
            continue
        name, sep, url = entry.partition("=")
        if not sep:
            name, url = "connect", entry
        if name.strip() in found:
            raise ConfigError(f"KAFKA_CONNECT_URLS names the Connect cluster {name.strip()!r} twice.")
        found[name.strip()] = ConnectConfig(
            name=name.strip(),
            url=url.strip().rstrip("/"),
            username=os.environ.get("KAFKA_CONNECT_USERNAME") or None,
            password=os.environ.get("KAFKA_CONNECT_PASSWORD") or None,
            ssl_cafile=os.environ.get("KAFKA_CONNECT_SSL_CAFILE") or None,
            ssl_verify=env_bool("KAFKA_CONNECT_SSL_VERIFY", True),
            timeout=timeout,
        )
    return found


def from_file(path: Path, timeout: float) -> dict[str, dict[str, ConnectConfig]]:
    """``[clusters.<c>.connect.<n>]`` tables of the clusters file, by Kafka cluster; raises ConfigError."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: {exc}.") from None
    found: dict[str, dict[str, ConnectConfig]] = {}
    for cluster, table in (data.get("clusters") or {}).items():
        connects = table.get("connect") if isinstance(table, dict) else None
        if connects is None:
            continue
        if not isinstance(connects, dict):
            raise ConfigError(f"cluster {cluster!r}: connect must be [clusters.{cluster}.connect.<name>] tables.")
        found[cluster] = {name: _from_table(cluster, name, t, timeout) for name, t in connects.items()}
        for name, t in connects.items():
            if isinstance(t, dict) and "allowed_classes" in t:
                where = f"KAZAMI_CLUSTERS_FILE: [clusters.{cluster}.connect.{name}]"
                _allowed[(cluster, name)] = parse_classes(t["allowed_classes"], where)
    return found


def _from_table(cluster: str, name: str, table: Any, timeout: float) -> ConnectConfig:
    where = f"[clusters.{cluster}.connect.{name}]"
    if not isinstance(table, dict) or not table.get("url"):
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE: {where} needs a url.")
    password = None
    if variable := table.get("password_env"):
        password = os.environ.get(str(variable))
        if password is None:
            raise ConfigError(f"{where}: environment variable {variable} (password_env) is not set.")
    verify = table.get("ssl_verify", True)
    if not isinstance(verify, bool):
        raise ConfigError(f"{where}: ssl_verify must be true or false.")
    return ConnectConfig(
        name=name,
        url=str(table["url"]).rstrip("/"),
        username=table.get("username"),
        password=password,
        ssl_cafile=table.get("ssl_cafile"),
        ssl_verify=verify,
        timeout=float(table.get("timeout", timeout)),
    )


def load() -> dict[str, dict[str, ConnectConfig]]:
    """Every Kafka cluster's Connect clusters by name (clusters without any are left out)."""
    clusters = get_configs()
    default = next(iter(clusters))
    timeout = env_float("KAZAMI_CONNECT_TIMEOUT", 5.0, minimum=0.1)
    found: dict[str, dict[str, ConnectConfig]] = {}
    if env := from_env(timeout):
        found[default] = env
    if file := os.environ.get("KAZAMI_CLUSTERS_FILE"):
        for cluster, connects in from_file(Path(file), timeout).items():
            if cluster not in clusters:
                raise ConfigError(f"KAZAMI_CLUSTERS_FILE: Connect clusters for unknown cluster {cluster!r}.")
            found[cluster] = connects
    for connects in found.values():
        for config in connects.values():
            keep_out_of_logs(*config.secrets)
    return found


def connect_configs(cluster: str) -> dict[str, ConnectConfig]:
    """The Connect clusters of Kafka cluster ``cluster`` by name (empty when it has none)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _allowed.clear()
            _loaded = load()
        return _loaded.get(cluster, {})


def connect_policy(cluster: str, connect: str) -> ConnectPolicy:
    """The policy operators' configs for ``connect`` (a Connect cluster of ``cluster``) are checked against:
    its allowed classes, and the Kafka cluster's own bootstrap servers (which configs may name)."""
    connect_config(cluster, connect)
    with _lock:
        allowed = _allowed[(cluster, connect)] if (cluster, connect) in _allowed else env_allowed_classes()
    config = get_configs().get(cluster)
    own = tuple(config.bootstrap_servers) if config is not None else ()
    return ConnectPolicy(allowed_classes=allowed, own_servers=own)


def connect_config(cluster: str, connect: str) -> ConnectConfig:
    """One Connect cluster of ``cluster``; raises NotFound naming those there are."""
    configs = connect_configs(cluster)
    if connect not in configs:
        known = ", ".join(configs) or "none is configured (KAFKA_CONNECT_URLS)"
        raise NotFound(f"No Connect cluster {connect!r} beside cluster {cluster!r}; configured: {known}.")
    return configs[connect]


def reset_for_tests() -> None:
    global _loaded
    with _lock:
        _loaded = None
        _allowed.clear()
