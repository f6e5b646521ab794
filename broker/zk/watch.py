"""ZooKeeper watches on Kafka's registry: a change there is known the moment ZooKeeper tells it, rather
than at the next look at the cluster's metadata.

A ZooKeeper-mode cluster keeps its live brokers as ephemeral znodes under ``/brokers/ids`` and its
controller in ``/controller``; the controller writes new topics under ``/brokers/topics`` and reads
reassignments from ``/admin/reassign_partitions``. A ``RegistryWatch`` holds a kazoo session of its own
with watches on those znodes and calls ``changed(what)`` with a short description each time one of them
changes (never for the state found when the watch is set). kazoo sets the watches again after a
reconnection; a session that cannot be made is retried in the background until ``stop``.

Nothing here reads metadata or stores events: the replication watch (console/background/replication_watch.py)
looks at the cluster when it is told, and its usual comparison makes the events.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

log = logging.getLogger(__name__)

# znode -> whether its children (True) or its data (False) are watched
WATCHED: dict[str, bool] = {
    "/brokers/ids": True,
    "/brokers/topics": True,
    "/controller": False,
    "/admin/reassign_partitions": False,
}
SESSION_TIMEOUT = 10.0
START_TIMEOUT = 5.0
RETRY_S = 10.0


def describe_children(path: str, before: Sequence[str], after: Sequence[str]) -> str | None:
    """What a change of ``path``'s children means, in words (None when nothing changed)."""
    gone, came = sorted(set(before) - set(after), key=_order), sorted(set(after) - set(before), key=_order)
    if not gone and not came:
        return None
    if path == "/brokers/ids":
        parts = [f"broker {b} registered" for b in came] + [f"broker {b}'s registration went away" for b in gone]
    elif path == "/brokers/topics":
        parts = [f"topic {t!r} assigned" for t in came] + [f"topic {t!r} removed" for t in gone]
    else:
        parts = [f"{path}/{c} created" for c in came] + [f"{path}/{c} deleted" for c in gone]
    return "; ".join(parts)


def describe_data(path: str, before: bytes | None, after: bytes | None) -> str | None:
    """What a change of ``path``'s data means, in words (None when nothing changed)."""
    if before == after:
        return None
    if path == "/controller":
        return "the controller znode went away (an election follows)" if after is None else "a controller was elected"
    if path == "/admin/reassign_partitions":
        return "a reassignment finished" if after is None else "a reassignment was asked"
    return f"{path} changed"


def _order(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


@dataclass
class RegistryWatch:
    """Watches on one cluster's registry; ``changed`` is called from kazoo's threads."""

    address: str
    changed: Callable[[str], None]
    auth: tuple[tuple[str, str], ...] = ()
    sasl: dict[str, str] | None = field(default=None, repr=False)
    _client: KazooClient | None = field(default=None, repr=False)
    _children: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _data: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    _stopped: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def watching(self) -> bool:
        """True while the session is connected and the watches are set."""
        client = self._client
        return client is not None and client.connected and len(self._children) + len(self._data) == len(WATCHED)

    def start(self) -> None:
        """Make the session and set the watches in the background (retried until ``stop``)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"zk-watch {self.address}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
                client.close()
            except Exception:  # a session being dropped may fail to stop; nothing depends on it
                log.debug("closing a ZooKeeper watch session failed", exc_info=True)

    def _run(self) -> None:
        while not self._stopped.is_set():
            client = KazooClient(
                hosts=self.address,
                timeout=SESSION_TIMEOUT,
                connection_retry=KazooRetry(max_tries=-1, delay=0.2, backoff=2, max_delay=5),
                auth_data=list(self.auth) or None,
                sasl_options=self.sasl,
            )
            try:
                client.start(timeout=START_TIMEOUT)
            except KazooTimeoutError:
                client.close()
                log.info("ZooKeeper %s does not answer; its watches are tried again in %g s", self.address, RETRY_S)
                self._stopped.wait(RETRY_S)
                continue
            self._client = client
            if self._stopped.is_set():  # stop() came while the session was being made
                self.stop()
                return
            for path, children in WATCHED.items():
                if children:
                    ChildrenWatch(client, path, self._on_children(path))
                else:
                    DataWatch(client, path, self._on_data(path))
            return

    def _on_children(self, path: str) -> Callable[[list[str]], bool]:
        def seen(children: list[str]) -> bool:
            if self._stopped.is_set():
                return False  # kazoo drops a watch whose function answers False
            before = self._children.get(path)
            self._children[path] = list(children)
            if before is not None and (what := describe_children(path, before, children)):
                self._tell(what)
            return True

        return seen

    def _on_data(self, path: str) -> Callable[[bytes | None, ZnodeStat | None], bool]:
        def seen(data: bytes | None, _stat: ZnodeStat | None) -> bool:
            if self._stopped.is_set():
                return False
            first = path not in self._data
            before = self._data.get(path)
            self._data[path] = data
            if not first and (what := describe_data(path, before, data)):
                self._tell(what)
            return True

        return seen

    def _tell(self, what: str) -> None:
        try:
            self.changed(what)
        except Exception:  # the listener's failure must not stop kazoo's watch thread
            log.exception("a ZooKeeper watch listener failed")
