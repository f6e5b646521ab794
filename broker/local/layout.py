"""Where the embedded cluster lives, which Kafka it runs in which mode, and its ports (saved as cluster.json).

Ports, in both modes: broker N serves clients on ``base_port + N`` (and SASL_SSL on that + the secure
offset). ZooKeeper mode adds ZooKeeper on ``zookeeper_port``. KRaft mode adds one controller listener
per controller on ``base_port + controller_port_offset + i`` (the i-th controller): in combined mode
(the default) node N is broker N and controller N at once; with separate controllers, controller i is
node ``CONTROLLER_ID_BASE + i``, a process of its own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from broker.errors import KazamiError
from broker.local.certs import CertFiles
from broker.local.versions import DEFAULT_VERSION, KafkaRelease, release

DEFAULT_CONTROLLER_PORT_OFFSET = 100
# Node ids of separate controllers: far from the brokers' 0, 1, 2..., so a log line names which is which.
CONTROLLER_ID_BASE = 100


class LauncherError(KazamiError):
    """A prerequisite is missing or the cluster could not be started; the message says what to do."""


@dataclass
class ClusterLayout:
    """Where the embedded cluster lives and which ports it uses; saved as cluster.json."""

    data: str
    brokers: int = 3
    zookeeper_port: int = 2181
    base_port: int = 9092
    pids: dict[str, int] = field(default_factory=dict)
    # Each broker's SASL_SSL port is its PLAINTEXT port plus this; None: no secure listener.
    sasl_ssl_port_offset: int | None = None
    kafka_version: str = DEFAULT_VERSION
    kraft: bool = False
    # KRaft only: controllers in processes of their own; 0: every broker is a controller as well (combined).
    controllers: int = 0
    controller_port_offset: int = DEFAULT_CONTROLLER_PORT_OFFSET
    # KRaft only: the id every node's storage is formatted with (made once, at the first `up`).
    cluster_id: str | None = None

    @property
    def release(self) -> KafkaRelease:
        return release(self.kafka_version)

    @property
    def mode(self) -> str:
        return "kraft" if self.kraft else "zookeeper"

    @property
    def combined(self) -> bool:
        """KRaft with every broker a controller too (``process.roles=broker,controller``)."""
        return self.kraft and self.controllers == 0

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.brokers))

    def broker_port(self, broker_id: int) -> int:
        return self.base_port + broker_id

    @property
    def controller_ids(self) -> list[int]:
        """The KRaft quorum's voters (node ids); empty in ZooKeeper mode."""
        if not self.kraft:
            return []
        if self.combined:
            return self.broker_ids
        return [CONTROLLER_ID_BASE + i for i in range(self.controllers)]

    @property
    def separate_controller_ids(self) -> list[int]:
        """The controllers that run as processes of their own (not brokers as well)."""
        return [] if self.combined else self.controller_ids

    def controller_port(self, node_id: int) -> int:
        return self.base_port + self.controller_port_offset + self.controller_ids.index(node_id)

    @property
    def quorum_voters(self) -> str:
        """``controller.quorum.voters``: a static quorum, the same in every node's file."""
        return ",".join(f"{n}@127.0.0.1:{self.controller_port(n)}" for n in self.controller_ids)

    @property
    def quorum_bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.controller_port(n)}" for n in self.controller_ids)

    @staticmethod
    def process_name(node_id: int, controller_only: bool = False) -> str:
        return f"controller-{node_id}" if controller_only else f"broker-{node_id}"

    @property
    def process_names(self) -> list[str]:
        """Every process of the cluster but ZooKeeper: separate controllers first, then the brokers."""
        return [self.process_name(n, True) for n in self.separate_controller_ids] + [
            self.process_name(b) for b in self.broker_ids
        ]

    def log_dir(self, node_id: int) -> Path:
        """A node's ``log.dirs`` (in KRaft also its metadata log)."""
        return self.root / f"kafka-logs-{node_id}"

    @property
    def secure(self) -> bool:
        return self.sasl_ssl_port_offset is not None

    def sasl_ssl_port(self, broker_id: int) -> int:
        """Broker ``broker_id``'s SASL_SSL port; raises LauncherError when the cluster has no secure listener."""
        if self.sasl_ssl_port_offset is None:
            raise LauncherError(f"The cluster in {self.data} has no SASL_SSL listener (start it with --sasl-ssl).")
        return self.broker_port(broker_id) + self.sasl_ssl_port_offset

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.sasl_ssl_port(b)}" for b in self.broker_ids)

    @property
    def certs(self) -> CertFiles:
        return CertFiles(self.root / "certs")

    @property
    def secrets_path(self) -> Path:
        return self.root / "secrets.json"

    @property
    def zookeeper_connect(self) -> str:
        """ZooKeeper's address; empty for a KRaft cluster, which has none (``ZOOKEEPER_CONNECT=`` means none)."""
        return "" if self.kraft else f"127.0.0.1:{self.zookeeper_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.broker_port(b)}" for b in self.broker_ids)

    @property
    def root(self) -> Path:
        return Path(self.data)

    def save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "cluster.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.root / "cluster.json")

    @classmethod
    def load(cls, data: str | Path) -> ClusterLayout | None:
        """The layout saved in ``data``, or None when no cluster was ever started there."""
        path = Path(data) / "cluster.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(**raw)


def free_controller_port_offset(sasl_ssl_port_offset: int | None, brokers: int, controllers: int) -> int:
    """The controllers' port offset: 100, or past the SASL_SSL ports when those take base + 100 onwards."""
    offset = DEFAULT_CONTROLLER_PORT_OFFSET
    if sasl_ssl_port_offset is None:
        return offset
    while offset < sasl_ssl_port_offset + brokers and sasl_ssl_port_offset < offset + max(controllers, brokers):
        offset += 100
    return offset
