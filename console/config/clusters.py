"""The clusters this console shows, read once from the environment (and an optional TOML file).

The default cluster comes from ``KAFKA_BOOTSTRAP_SERVERS`` / ``ZOOKEEPER_CONNECT`` and the
``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*`` and ``KAFKA_SSL_*`` variables, and is called
``KAZAMI_CLUSTER_NAME`` (``local`` by default, the embedded cluster). More clusters come
from ``KAZAMI_CLUSTERS_FILE``, a TOML file with one ``[clusters.<name>]`` table each; a
password there is read from the environment variable its ``sasl_password_env`` (or, for an
encrypted client key, ``ssl_key_password_env``; for ZooKeeper's credentials, ``zookeeper_auth_env``)
names, so the file itself holds no secret. ZooKeeper is read-only unless ``ZOOKEEPER_WRITES`` (or
``zookeeper_writes = true``) lets admins change it.
The TLS files each cluster names are checked when the configuration is loaded; an error names
the variable or key, never a secret or a file's content.
"""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path
from typing import Any

from broker.client.config import ClusterConfig, split_servers, ssl_context
from broker.client.connection import ClusterConnection
from broker.errors import ConfigError, UnknownCluster
from console.config.env import env_bool, env_float, env_str

_lock = threading.Lock()
_connections: dict[str, ClusterConnection] = {}
_configs: dict[str, ClusterConfig] | None = None

# How the default cluster's TLS settings are named in error messages.
ENV_LABELS = {
    "ssl_cafile": "KAFKA_SSL_CAFILE",
    "ssl_certfile": "KAFKA_SSL_CERTFILE",
    "ssl_keyfile": "KAFKA_SSL_KEYFILE",
    "ssl_password": "KAFKA_SSL_KEY_PASSWORD",
}


def default_cluster_from_env() -> ClusterConfig:
    return ClusterConfig(
        name=env_str("KAZAMI_CLUSTER_NAME", "local"),
        bootstrap_servers=split_servers(
            env_str("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094")
        ),
        # Unset: in ZooKeeper mode, the brokers' own zookeeper.connect; on KRaft, none whatever is set.
        zookeeper_connect=env_str("ZOOKEEPER_CONNECT", "") or None,
        security_protocol=env_str("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT").upper(),
        sasl_mechanism=os.environ.get("KAFKA_SASL_MECHANISM"),
        sasl_username=os.environ.get("KAFKA_SASL_USERNAME"),
        sasl_password=os.environ.get("KAFKA_SASL_PASSWORD"),
        ssl_cafile=os.environ.get("KAFKA_SSL_CAFILE"),
        ssl_certfile=os.environ.get("KAFKA_SSL_CERTFILE"),
        ssl_keyfile=os.environ.get("KAFKA_SSL_KEYFILE"),
        ssl_password=os.environ.get("KAFKA_SSL_KEY_PASSWORD"),
        ssl_check_hostname=env_bool("KAFKA_SSL_CHECK_HOSTNAME", True),
        read_only=env_bool("KAZAMI_READ_ONLY", False),
        timeout=env_float("KAZAMI_KAFKA_TIMEOUT", 2.5, minimum=0.1),
        max_age=env_float("KAZAMI_MAX_AGE", 1.0, minimum=0.0),
        log_dir_roots=_log_dir_roots(os.environ.get("KAZAMI_LOG_DIRS")),
        zookeeper_writes=env_bool("ZOOKEEPER_WRITES", False),
        zookeeper_auth=os.environ.get("ZOOKEEPER_AUTH") or None,
        zookeeper_acl=os.environ.get("ZOOKEEPER_ACL") or "open",
    )


def _log_dir_roots(value: str | None) -> tuple[str, ...]:
    """``KAZAMI_LOG_DIRS`` (folders, or ``[BROKER:]BROKER_PATH=LOCAL_PATH`` mappings, separated by commas);
    unset, the project's ``var/`` folder, where the embedded clusters keep their log dirs."""
    if value is None:
        return (str(Path(__file__).resolve().parents[2] / "var"),)
    return tuple(p.strip() for p in value.split(",") if p.strip())


def clusters_from_file(path: Path, timeout: float, max_age: float = 1.0) -> list[ClusterConfig]:
    """Clusters declared in a TOML file; raises ConfigError naming the file and the problem."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: {exc.strerror}.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: not valid TOML ({exc}).") from None
    tables = data.get("clusters")
    if not isinstance(tables, dict):
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: expected [clusters.<name>] tables.")
    return [_cluster_from_table(name, table, path, timeout, max_age) for name, table in tables.items()]


def _cluster_from_table(name: str, table: Any, path: Path, timeout: float, max_age: float) -> ClusterConfig:
    if not isinstance(table, dict) or "bootstrap_servers" not in table:
        raise ConfigError(f"KAZAMI_CLUSTERS_FILE {path}: [clusters.{name}] needs bootstrap_servers.")
    password = _secret_from_env(name, table, "sasl_password_env")
    key_password = _secret_from_env(name, table, "ssl_key_password_env")
    zookeeper_auth = _secret_from_env(name, table, "zookeeper_auth_env")
    servers = table["bootstrap_servers"]
    return ClusterConfig(
        name=name,
        bootstrap_servers=tuple(servers) if isinstance(servers, list) else split_servers(str(servers)),
        zookeeper_connect=table.get("zookeeper_connect"),
        security_protocol=str(table.get("security_protocol", "PLAINTEXT")).upper(),
        sasl_mechanism=table.get("sasl_mechanism"),
        sasl_username=table.get("sasl_username"),
        sasl_password=password,
        ssl_cafile=table.get("ssl_cafile"),
        ssl_certfile=table.get("ssl_certfile"),
        ssl_keyfile=table.get("ssl_keyfile"),
        ssl_password=key_password,
        ssl_check_hostname=bool(table.get("ssl_check_hostname", True)),
        read_only=bool(table.get("read_only", False)),
        timeout=float(table.get("timeout", timeout)),
        max_age=float(table.get("max_age", max_age)),
        log_dir_roots=tuple(str(p) for p in table.get("log_dirs", [])),
        zookeeper_writes=_flag(name, table, "zookeeper_writes"),
        zookeeper_auth=zookeeper_auth or None,
        zookeeper_acl=str(table.get("zookeeper_acl", "open")),
    )


def _flag(name: str, table: dict[str, Any], key: str) -> bool:
    """A true/false key of a cluster's table (absent: false); a string such as "false" is refused, not
    taken as true."""
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"cluster {name!r}: {key} must be true or false, not {value!r}.")
    return value


def _secret_from_env(name: str, table: dict[str, Any], key: str) -> str | None:
    """The value of the environment variable ``table[key]`` names (None when the key is absent)."""
    variable = table.get(key)
    if not variable:
        return None
    value = os.environ.get(str(variable))
    if value is None:
        raise ConfigError(f"cluster {name!r}: environment variable {variable} ({key}) is not set.")
    return value


def _toml_labels(name: str) -> dict[str, str]:
    where = f"[clusters.{name}]"
    return {
        "ssl_cafile": f"ssl_cafile of {where}",
        "ssl_certfile": f"ssl_certfile of {where}",
        "ssl_keyfile": f"ssl_keyfile of {where}",
        "ssl_password": f"ssl_key_password_env of {where}",
    }


def load_configs() -> dict[str, ClusterConfig]:
    """Every configured cluster by name, the default one first, its TLS files checked (they exist and
    load); raises ConfigError."""
    default = default_cluster_from_env()
    ssl_context(default, ENV_LABELS)
    configs = {default.name: default}
    file = os.environ.get("KAZAMI_CLUSTERS_FILE")
    if file:
        for config in clusters_from_file(Path(file), default.timeout, default.max_age):
            if config.name in configs:
                raise ConfigError(f"cluster {config.name!r} is declared twice.")
            ssl_context(config, _toml_labels(config.name))
            configs[config.name] = config
    return configs


def get_configs() -> dict[str, ClusterConfig]:
    global _configs
    with _lock:
        if _configs is None:
            _configs = load_configs()
        return _configs


def get_connection(name: str) -> ClusterConnection:
    """The shared connection of cluster ``name``; raises UnknownCluster."""
    configs = get_configs()
    if name not in configs:
        raise UnknownCluster(f"No cluster named {name!r}; configured: {', '.join(configs)}.")
    with _lock:
        conn = _connections.get(name)
        if conn is None:
            conn = _connections[name] = ClusterConnection(configs[name])
        return conn


def reset_for_tests() -> None:
    """Forget the configuration and connections (settings changed under a test)."""
    global _configs
    with _lock:
        for conn in _connections.values():
            conn.close()
        _connections.clear()
        _configs = None
