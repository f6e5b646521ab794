"""Whether ZooKeeper serves, for the Kafka pages that need it (broker.topics). The ZooKeeper browser,
Kafka's registry and the servers' health are in ``broker.zk``."""

from __future__ import annotations

from broker.zk.fourletter import serving


def zookeeper_serving(connect: str, timeout: float) -> bool:
    """True when a server of ``connect`` ("host:port,host:port[/chroot]") serves requests, judged by its
    answer to the ``srvr`` command: a server without a quorum says it is not serving; one that does not
    allow the command still answers, and counts as serving. Takes at most ``timeout`` seconds in all."""
    return serving(connect, timeout)
