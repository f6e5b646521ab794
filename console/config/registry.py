"""The schema registry beside each Kafka cluster, read once from the environment and the clusters file.

The default cluster's comes from ``SCHEMA_REGISTRY_URL`` (its Confluent-compatible base URL; Apicurio's is
``http://host:8080/apis/ccompat/v7``), with ``SCHEMA_REGISTRY_USERNAME`` / ``SCHEMA_REGISTRY_PASSWORD`` (basic
auth) or ``SCHEMA_REGISTRY_TOKEN`` (a bearer token), ``SCHEMA_REGISTRY_SSL_CAFILE``,
``SCHEMA_REGISTRY_SSL_CERTFILE``, ``SCHEMA_REGISTRY_SSL_KEYFILE``, ``SCHEMA_REGISTRY_SSL_VERIFY`` and
``SCHEMA_REGISTRY_TIMEOUT`` (seconds, default 5). A cluster of the clusters file (``KAZAMI_CLUSTERS_FILE``)
declares its own in a ``[clusters.<name>.schema_registry]`` table with ``url``, ``username``, ``password_env``
and ``token_env`` (the environment variables holding the secrets, so the file holds none), ``ssl_cafile``,
``ssl_certfile``, ``ssl_keyfile``, ``ssl_verify`` and ``timeout``. Secrets are kept out of the logs and never
shown.

``registry_for(cluster)`` gives the one Registry of a cluster in this process (so its cache of schemas by id
is shared by every page and record), or None when the cluster has no registry.
"""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path
from typing import Any

from broker.client.connection import keep_out_of_logs
from broker.errors import ConfigError
from broker.schemas.registry import Registry, RegistryConfig
from console.config.clusters import get_configs
from console.config.env import env_bool, env_float

_lock = threading.Lock()
_configs: dict[str, RegistryConfig] | None = None
_registries: dict[str, Registry] = {}

KEYS = (
    "url",
    "username",
    "password_env",
    "token_env",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_verify",
    "timeout",
)


def from_env() -> RegistryConfig | None:
    """The default cluster's registry from ``SCHEMA_REGISTRY_*`` (None when no URL is set); raises ConfigError."""
    url = os.environ.get("SCHEMA_REGISTRY_URL", "").strip()
    if not url:
        return None
    return RegistryConfig(
        url=url.rstrip("/"),
        username=os.environ.get("SCHEMA_REGISTRY_USERNAME") or None,
        password=os.environ.get("SCHEMA_REGISTRY_PASSWORD") or None,
        token=os.environ.get("SCHEMA_REGISTRY_TOKEN") or None,
        ssl_cafile=os.environ.get("SCHEMA_REGISTRY_SSL_CAFILE") or None,
        ssl_certfile=os.environ.get("SCHEMA_REGISTRY_SSL_CERTFILE") or None,
        ssl_keyfile=os.environ.get("SCHEMA_REGISTRY_SSL_KEYFILE") or None,
        ssl_verify=env_bool("SCHEMA_REGISTRY_SSL_VERIFY", True),
        timeout=env_float("SCHEMA_REGISTRY_TIMEOUT", 5.0, minimum=0.1),
    )


def from_file(path: Path, timeout: float) -> dict[str, RegistryConfig]:
    """``[clusters.<c>.schema_registry]`` tables of the clusters file, by Kafka cluster; raises ConfigError."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: {exc}.") from None
    found: dict[str, RegistryConfig] = {}
    for cluster, table in (data.get("clusters") or {}).items():
        registry = table.get("schema_registry") if isinstance(table, dict) else None
        if registry is not None:
            found[cluster] = from_table(cluster, registry, timeout)
    return found


def _secret(where: str, table: dict[str, Any], key: str) -> str | None:
    variable = table.get(key)
    if not variable:
        return None
    value = os.environ.get(str(variable))
    if value is None:
        raise ConfigError(f"{where}: environment variable {variable} ({key}) is not set.")
    return value


def from_table(cluster: str, table: Any, timeout: float) -> RegistryConfig:
    where = f"KAZAMI_CLUSTERS_FILE: [clusters.{cluster}.schema_registry]"
    if not isinstance(table, dict) or not table.get("url"):
        raise ConfigError(f"{where} needs a url.")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(KEYS)}.")
    verify = table.get("ssl_verify", True)
    if not isinstance(verify, bool):
        raise ConfigError(f"{where}: ssl_verify must be true or false.")
    seconds = table.get("timeout", timeout)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ConfigError(f"{where}: timeout must be a number of seconds.")
    try:
        return RegistryConfig(
            url=str(table["url"]).strip().rstrip("/"),
            username=str(table["username"]) if table.get("username") is not None else None,
            password=_secret(where, table, "password_env"),
            token=_secret(where, table, "token_env"),
            ssl_cafile=table.get("ssl_cafile"),
            ssl_certfile=table.get("ssl_certfile"),
            ssl_keyfile=table.get("ssl_keyfile"),
            ssl_verify=verify,
            timeout=float(seconds),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {str(exc).removeprefix('the schema registry: ')}") from None


def load() -> dict[str, RegistryConfig]:
    """Every Kafka cluster's registry by cluster name (clusters without one are left out)."""
    clusters = get_configs()
    default = next(iter(clusters))
    found: dict[str, RegistryConfig] = {}
    env = from_env()
    if env is not None:
        found[default] = env
    if file := os.environ.get("KAZAMI_CLUSTERS_FILE"):
        timeout = env_float("SCHEMA_REGISTRY_TIMEOUT", 5.0, minimum=0.1)
        for cluster, config in from_file(Path(file), timeout).items():
            if cluster not in clusters:
                raise ConfigError(f"KAZAMI_CLUSTERS_FILE: a schema registry for unknown cluster {cluster!r}.")
            found[cluster] = config
    for config in found.values():
        keep_out_of_logs(*config.secrets)
    return found


def registry_config(cluster: str) -> RegistryConfig | None:
    global _configs
    with _lock:
        if _configs is None:
            _configs = load()
        return _configs.get(cluster)


def registry_for(cluster: str) -> Registry | None:
    """The one Registry of ``cluster`` in this process (None when it has none configured)."""
    config = registry_config(cluster)
    if config is None:
        return None
    with _lock:
        registry = _registries.get(cluster)
        if registry is None or registry.config != config:
            registry = _registries[cluster] = Registry(config)
        return registry


def reset_for_tests() -> None:
    global _configs
    with _lock:
        _configs = None
        _registries.clear()
