"""How to reach a cluster: bootstrap servers, ZooKeeper and the security settings, with secrets kept apart."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from broker.errors import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLUSTER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
HOST_PORT = re.compile(r"^[^\s:,]+:\d{1,5}$")


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster the console can show. ``repr`` never shows the SASL password."""

    name: str
    bootstrap_servers: tuple[str, ...]
    zookeeper_connect: str | None = None
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True
    read_only: bool = False
    # Seconds any one Kafka call may take before the cluster counts as unavailable.
    timeout: float = 2.5

    def __post_init__(self) -> None:
        check_cluster_config(self)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python clients (admin, consumer, producer)."""
        opts: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "security_protocol": self.security_protocol,
            "request_timeout_ms": int(self.timeout * 1000),
        }
        if self.security_protocol in ("SSL", "SASL_SSL"):
            opts.update(
                ssl_cafile=self.ssl_cafile,
                ssl_certfile=self.ssl_certfile,
                ssl_keyfile=self.ssl_keyfile,
                ssl_check_hostname=self.ssl_check_hostname,
            )
        if self.security_protocol.startswith("SASL_"):
            opts.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password,
            )
        return opts


def check_cluster_config(config: ClusterConfig) -> None:
    """Raise ConfigError naming the first bad field of ``config``."""
    where = f"cluster {config.name!r}"
    if not CLUSTER_NAME.match(config.name):
        raise ConfigError(f"{where}: a cluster name is lower-case letters, digits, '-' or '_' (at most 63).")
    if not config.bootstrap_servers:
        raise ConfigError(f"{where}: bootstrap servers are empty; give host:port[,host:port...].")
    for server in config.bootstrap_servers:
        if not HOST_PORT.match(server):
            raise ConfigError(f"{where}: bootstrap server {server!r} is not host:port.")
    if config.security_protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where}: security protocol {config.security_protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}."
        )
    if config.security_protocol.startswith("SASL_"):
        if config.sasl_mechanism not in SASL_MECHANISMS:
            raise ConfigError(
                f"{where}: SASL mechanism {config.sasl_mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}."
            )
        if not config.sasl_username or config.sasl_password is None:
            raise ConfigError(f"{where}: SASL needs a username and a password.")
    if config.timeout <= 0:
        raise ConfigError(f"{where}: the time-out must be positive.")


def split_servers(value: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in value.split(",") if s.strip())
