"""The Kafka releases the embedded cluster runs, and where each one's jars come from and live.

Kafka 3.9.1 (the default) runs in ZooKeeper or KRaft mode from ``broker/local/jars/`` (``pom.xml``);
a Kafka 4.x release runs in KRaft mode only from ``broker/local/jars-<version>/``
(``pom-kafka4.xml`` with ``-Dkafka.version``). Each folder is git-ignored and filled once by Maven.
The differences the launcher and the tools must know are here, not spread through the code:
the logging backend (log4j 1 through reload4j in 3.x, log4j2 in 4.x) and the class of each tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from broker.errors import KazamiError
from broker.local.maven import copy_dependencies, jars_complete

HERE = Path(__file__).resolve().parent
DEFAULT_VERSION = "3.9.1"
# The Kafka 4 release `--kraft` alone does not pick (3.9.1 stays the default); `make install` fetches it.
DEFAULT_KAFKA4_VERSION = "4.3.0"


class UnsupportedVersion(KazamiError):
    """A Kafka version the embedded cluster cannot run."""


@dataclass(frozen=True)
class KafkaRelease:
    """One Kafka release as the embedded cluster runs it."""

    version: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def jars(self) -> Path:
        """The folder of its jars: ``jars/`` for the default release (as before there were others)."""
        return HERE / "jars" if self.version == DEFAULT_VERSION else HERE / f"jars-{self.version}"

    @property
    def pom(self) -> Path:
        return HERE / ("pom.xml" if self.major == 3 else "pom-kafka4.xml")

    @property
    def has_zookeeper(self) -> bool:
        """Kafka 4 removed ZooKeeper mode (KIP-500)."""
        return self.major == 3

    @property
    def log4j2(self) -> bool:
        """Kafka 4 logs with log4j2 (``-Dlog4j2.configurationFile``); 3.x with log4j 1 (reload4j)."""
        return self.major >= 4

    @property
    def classpath(self) -> str:
        return str(self.jars / "*")

    def tool(self, name: str) -> str:
        """The main class of Kafka's tool ``name`` in this release (``StorageTool``, ``DumpLogSegments``, ...):
        DumpLogSegments moved from the Scala core (``kafka.tools``) to the tools module in Kafka 4; StorageTool
        stays in the core; the others are in ``org.apache.kafka.tools`` in both."""
        if name == "StorageTool" or (name == "DumpLogSegments" and self.major == 3):
            return f"kafka.tools.{name}"
        if name == "ConsumerGroupCommand":
            return "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
        if name == "ConsoleConsumer":
            return "org.apache.kafka.tools.consumer.ConsoleConsumer"
        return f"org.apache.kafka.tools.{name}"

    def ready(self) -> bool:
        return jars_complete(self.jars)

    def fetch(self, echo: Callable[[str], None] = print) -> None:
        """Copy this release's jars from Maven Central once (later calls do nothing); raises MavenError."""
        copy_dependencies(
            self.pom,
            self.jars,
            f"the Apache Kafka {self.version} jars (into {self.jars.relative_to(HERE.parent.parent)})",
            echo,
            properties={"kafka.version": self.version},
        )


def release(version: str | None = None) -> KafkaRelease:
    """The release for ``version`` (default 3.9.1); raises UnsupportedVersion for anything but 3.x or 4.x
    given as three numbers (what Maven Central names them)."""
    version = version or DEFAULT_VERSION
    if not re.fullmatch(r"[34]\.\d+\.\d+", version):
        raise UnsupportedVersion(
            f"Kafka version {version!r} is not one the embedded cluster runs: give a 3.x or 4.x release as "
            f"three numbers, e.g. {DEFAULT_VERSION} or {DEFAULT_KAFKA4_VERSION}."
        )
    found = KafkaRelease(version)
    if found.major == 3 and int(version.split(".")[1]) < 7:
        raise UnsupportedVersion(
            f"Kafka {version} is older than the embedded cluster runs (3.7); use {DEFAULT_VERSION}."
        )
    return found
