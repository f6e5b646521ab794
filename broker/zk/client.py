"""Reading znodes through one kazoo session per cluster, every call bounded by the cluster's time-out.

The session is made the first time a cluster's ZooKeeper is read and kept for the next reads. A call
that finds ZooKeeper silent (no session within the time-out, or a request not answered in time) drops
the session and raises ZooKeeperUnavailable; the next call starts a new one, so the browser recovers
by itself once ZooKeeper is back. A chroot in the connect string (``host:2181/kafka``) is honoured by
kazoo: paths here are the ones the brokers see. The session presents the cluster's ZooKeeper credentials
(``zookeeper_auth``) when it has some. Nothing in this module writes (``broker.zk.writes`` does, through
the same sessions).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.retry import KazooRetry

from broker.client.connection import SECRETS_REDACTED, ClusterConnection
from broker.cluster.overview import get_overview
from broker.errors import ClusterAuthFailed, ClusterUnavailable, InvalidInput, KafkaRefused, NotFound, NotSupported
from broker.zk.fourletter import ServerHealth, check_servers
from broker.zk.nodes import Child, ChildPage, ZAcl, ZNode, ZStat
from broker.zk.paths import ancestors, check_path, child_path, name_order, split_connect

log = logging.getLogger(__name__)
# kazoo logs each request it sends at its lowest level, the one that presents the credentials included:
# the secrets registered for kafka-python's logs (broker.client.connection.keep_out_of_logs) are kept out of its too.
for _name in ("kazoo.client", "kazoo.protocol.connection"):
    logging.getLogger(_name).addFilter(SECRETS_REDACTED)

# A znode holds at most 1 MiB by default (jute.maxbuffer); one said to hold more is not read.
MAX_DATA = 1024 * 1024
MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
# The session ZooKeeper keeps for us; reads are bounded by the cluster's time-out, not by this.
SESSION_TIMEOUT = 10.0
# However many requests a read makes, it gives up after this many time-outs of the cluster.
MAX_ROUNDS = 2


class ZooKeeperUnavailable(ClusterUnavailable):
    """ZooKeeper did not answer within the cluster's time-out (the Kafka pages do not depend on it)."""


class ZNodeNotFound(NotFound):
    """No znode at that path."""


class ZNodeNotReadable(KafkaRefused):
    """ZooKeeper refused to read the znode: its ACL does not let the console's session read it."""


class ZNodeNotWritable(KafkaRefused):
    """ZooKeeper refused a change: the znode's ACL (or its parent's) does not let the console's session."""


class ZooKeeperAuthFailed(ClusterAuthFailed):
    """ZooKeeper refused the credentials the console's session presented (zookeeper_auth)."""


class NoZooKeeper(NotSupported):
    """The cluster runs in KRaft mode: it has no ZooKeeper."""


# ---------------------------------------------------------------- sessions


@dataclass
class _Session:
    address: str
    auth: tuple[tuple[str, str], ...]  # the credentials it presents: a change of them starts a new session
    client: KazooClient
    live: threading.Event  # set while connected (kazoo's own event)


_lock = threading.Lock()
_sessions: dict[str, _Session] = {}


def _close_quietly(client: KazooClient) -> None:
    try:
        client.stop()
        client.close()
    except Exception:  # a client being dropped may fail to stop; nothing depends on it
        log.debug("closing a dropped ZooKeeper client failed", exc_info=True)


def _drop(name: str, session: _Session) -> None:
    """Forget ``session`` (unless another replaced it already) and close it in the background."""
    with _lock:
        if _sessions.get(name) is session:
            del _sessions[name]
    threading.Thread(target=_close_quietly, args=(session.client,), daemon=True).start()


def close_clients(name: str | None = None) -> None:
    """Close the ZooKeeper session of cluster ``name`` (every cluster's when None)."""
    with _lock:
        names = [name] if name is not None else list(_sessions)
        dropped = [_sessions.pop(n) for n in names if n in _sessions]
    for session in dropped:
        _close_quietly(session.client)


def _session(conn: ClusterConnection, address: str, deadline: float) -> _Session:
    """The cluster's connected session, started if need be; raises ZooKeeperUnavailable after the
    cluster's time-out (or at ``deadline``) without one."""
    name = conn.config.name
    auth = tuple(conn.config.zookeeper_auth_data())
    sasl = conn.config.zookeeper_sasl_options()
    if sasl is not None:  # the session itself authenticates: its identity is the user and password
        auth = (("sasl", f"{sasl['username']}:{sasl['password']}"),)
    with _lock:
        session = _sessions.get(name)
        if session is None or session.address != address or session.auth != auth:
            if session is not None:
                threading.Thread(target=_close_quietly, args=(session.client,), daemon=True).start()
            client = KazooClient(
                hosts=address,
                timeout=SESSION_TIMEOUT,
                # Reconnect at least once per time-out while ZooKeeper is away.
                connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=conn.config.timeout),
                auth_data=conn.config.zookeeper_auth_data() or None,
                sasl_options=sasl,
            )
            session = _sessions[name] = _Session(address, auth, client, client.start_async())
    wait = min(conn.config.timeout, deadline - time.monotonic())
    if not session.live.wait(timeout=max(0.0, wait)):
        refused = session.client.client_state == KeeperState.AUTH_FAILED
        _drop(name, session)
        if refused:
            scheme = auth[0][0] if auth else "none"
            raise ZooKeeperAuthFailed(
                f"ZooKeeper ({address}) refused the credentials of cluster {name!r} (scheme {scheme}): "
                "check ZOOKEEPER_AUTH, or the variable zookeeper_auth_env names."
            )
        raise _unavailable(conn, address)
    return session


def _unavailable(conn: ClusterConnection, address: str) -> ZooKeeperUnavailable:
    return ZooKeeperUnavailable(
        f"ZooKeeper ({address}) does not answer: no reply within {conn.config.timeout:g} s. "
        f"The Kafka pages of cluster {conn.config.name!r} keep working without it."
    )


class _Reads:
    """The requests of one read: each answer awaited until the read's deadline at most."""

    def __init__(self, conn: ClusterConnection, address: str) -> None:
        self.conn = conn
        self.address = address
        self.deadline = time.monotonic() + conn.config.timeout * MAX_ROUNDS
        self.session = _session(conn, address, self.deadline)
        self.client = self.session.client

    def wait(self, pending: Any, path: str, change: bool = False, keep: tuple[type[Exception], ...] = ()) -> Any:
        """The answer of a kazoo async call about ``path``; raises ZNodeNotFound, ZNodeNotReadable (or
        ZNodeNotWritable for a ``change``), ZooKeeperUnavailable, or the kazoo errors in ``keep`` as
        they are (for the caller to say what they mean)."""
        try:
            return pending.get(timeout=max(0.001, self.deadline - time.monotonic()))
        except keep:
            raise
        except NoNodeError:
            raise self.not_found(path) from None
        except NoAuthError:
            if change:
                raise ZNodeNotWritable(
                    f"ZooKeeper does not let the console change {path}: the ACL of the znode (or, to create "
                    "or delete one, of its parent) does not allow the console's session. Set ZooKeeper "
                    "credentials for the cluster (zookeeper_auth) that its ACL allows."
                ) from None
            raise ZNodeNotReadable(
                f"ZooKeeper does not let the console read {path}: its ACL allows other users only."
            ) from None
        except (
            KazooTimeoutError,
            ConnectionLoss,
            SessionExpiredError,
            ConnectionClosedError,
            OperationTimeoutError,
        ):
            _drop(self.conn.config.name, self.session)
            raise _unavailable(self.conn, self.address) from None
        except ZookeeperError as exc:
            doing = "change" if change else "read"
            raise KafkaRefused(f"ZooKeeper refused to {doing} {path}: {exc.__class__.__name__}.") from None

    def not_found(self, path: str) -> ZNodeNotFound:
        _, chroot = split_connect(self.address)
        if path == "/" and chroot:
            return ZNodeNotFound(f"The chroot {chroot} of ZooKeeper {self.address} does not exist.")
        return ZNodeNotFound(f"No znode at {path} in ZooKeeper ({self.address}).")

    def children_of(self, paths: Sequence[str]) -> dict[str, tuple[list[str], ZStat] | None]:
        """Children and stat of each path, asked at once; None for a path that does not exist."""
        pending = {p: self.client.get_children_async(p, include_data=True) for p in paths}
        found: dict[str, tuple[list[str], ZStat] | None] = {}
        for p, call in pending.items():
            try:
                names, stat = self.wait(call, p)
            except ZNodeNotFound:
                found[p] = None
                continue
            found[p] = (sorted(names, key=name_order), ZStat.of(stat))
        return found

    def pages(self, wanted: Sequence[tuple[str, list[str], int, int]], stats: bool) -> list[ChildPage]:
        """For each (parent, its children's names sorted, offset, limit), that page of children, with each
        child's stat when ``stats``: every stat asked at once, so one round trip for all the pages."""
        pending = []
        for parent, names, offset, limit in wanted:
            shown = [child_path(parent, n) for n in names[offset : offset + limit]]
            pending.append([(p, self.client.exists_async(p) if stats else None) for p in shown])
        found = []
        for (parent, names, offset, limit), calls in zip(wanted, pending, strict=True):
            children = []
            for p, call in calls:
                try:
                    stat = self.wait(call, p) if call is not None else None
                except ZNodeNotReadable:  # its ACL hides its stat too: listed, without figures
                    stat = None
                name = p.rsplit("/", 1)[1]
                if stat is None:  # not asked, deleted meanwhile, or not readable
                    children.append(Child(name, p))
                else:
                    figures = int(stat.numChildren), int(stat.dataLength), bool(stat.ephemeralOwner)
                    children.append(Child(name, p, *figures))
            found.append(ChildPage(parent, tuple(children), len(names), offset, limit))
        return found


# ---------------------------------------------------------------- what the pages ask


def zookeeper_address(conn: ClusterConnection) -> str:
    """The cluster's ZooKeeper connect string: the configured one, else the brokers' own
    ``zookeeper.connect``. Raises NoZooKeeper on a KRaft cluster, ClusterUnavailable when it is not known."""
    mode = conn.mode()
    if mode == "kraft":
        raise NoZooKeeper(
            f"Cluster {conn.config.name!r} runs in KRaft mode: it has no ZooKeeper. Its metadata lives in "
            "the quorum of its controllers."
        )
    address = conn.zookeeper_connect
    if not address and mode == "zookeeper":
        with contextlib.suppress(ClusterUnavailable):  # the overview learns the brokers' zookeeper.connect
            get_overview(conn)
        address = conn.zookeeper_connect
    if not address:
        if mode is None:
            raise ClusterUnavailable(
                f"Cluster {conn.config.name!r} does not answer and has no ZooKeeper configured "
                "(ZOOKEEPER_CONNECT, or zookeeper_connect in the clusters file), so its ZooKeeper is not known."
            )
        raise ClusterUnavailable(
            f"The ZooKeeper of cluster {conn.config.name!r} is not known: its controller did not say its "
            "zookeeper.connect. Configure it (ZOOKEEPER_CONNECT, or zookeeper_connect in the clusters file)."
        )
    return address


def _check_page(offset: int, limit: int) -> None:
    if offset < 0:
        raise InvalidInput(f"offset must be at least 0, not {offset}.")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}.")


def get_node(
    conn: ClusterConnection, path: str, offset: int = 0, limit: int = DEFAULT_LIMIT, child_stats: bool = False
) -> ZNode:
    """The znode at ``path``: data (up to MAX_DATA bytes), stat, ACL, and children ``offset`` to
    ``offset + limit`` (each with its stat when ``child_stats``). ZooKeeper lists a znode's children
    whole; only the page asked for is kept. Raises InvalidInput (path, offset, limit), ZNodeNotFound,
    NoZooKeeper, ZooKeeperUnavailable, ZNodeNotReadable."""
    path = check_path(path)
    _check_page(offset, limit)
    reads = _Reads(conn, zookeeper_address(conn))
    listed = reads.children_of([path])[path]
    if listed is None:
        raise reads.not_found(path)
    names, stat = listed
    too_large = stat.data_length > MAX_DATA
    # The data, the ACL and the children's stats in one round trip.
    data_call = reads.client.get_async(path) if 0 < stat.data_length <= MAX_DATA else None
    acl_call = reads.client.get_acls_async(path)
    [page] = reads.pages([(path, names, offset, limit)], child_stats)
    data: bytes | None = None if too_large else b""
    if data_call is not None:
        data, fresh = reads.wait(data_call, path)
        stat = ZStat.of(fresh)
    try:
        acl: tuple[ZAcl, ...] | None = tuple(ZAcl.of(a) for a in reads.wait(acl_call, path)[0])
    except (ZNodeNotReadable, ZNodeNotFound):  # the ACL needs read or admin rights; or it went meanwhile
        acl = None
    return ZNode(path, data, too_large, stat, page, acl)


def get_children(conn: ClusterConnection, path: str, offset: int = 0, limit: int = DEFAULT_LIMIT) -> ChildPage:
    """A page of the children of ``path``, each with its stat (for the tree). Raises as get_node."""
    path = check_path(path)
    _check_page(offset, limit)
    reads = _Reads(conn, zookeeper_address(conn))
    listed = reads.children_of([path])[path]
    if listed is None:
        raise reads.not_found(path)
    return reads.pages([(path, listed[0], offset, limit)], stats=True)[0]


def get_tree(conn: ClusterConnection, path: str, limit: int = DEFAULT_LIMIT) -> dict[str, ChildPage]:
    """The tree from ``/`` opened down to ``path``: {opened path: page of its children}, each page the one
    that holds the next segment of ``path``. Stops at the deepest path that exists. Two round trips
    whatever the depth. Raises InvalidInput, NoZooKeeper, ZooKeeperUnavailable."""
    path = check_path(path)
    reads = _Reads(conn, zookeeper_address(conn))
    opened = ancestors(path)
    listed = reads.children_of(opened)
    wanted: list[tuple[str, list[str], int, int]] = []
    for depth, parent in enumerate(opened):
        entry = listed.get(parent)
        if entry is None:
            break
        names = entry[0]
        offset = 0
        if depth + 1 < len(opened):
            below = opened[depth + 1].rsplit("/", 1)[1]
            if below in names:
                index = names.index(below)
                offset = index - index % limit
        wanted.append((parent, names, offset, limit))
    return {page.parent: page for page in reads.pages(wanted, stats=True)}


def get_servers(conn: ClusterConnection) -> tuple[str, list[ServerHealth]]:
    """(connect string, each server's health from its four-letter words), within the cluster's time-out.
    Raises NoZooKeeper, ClusterUnavailable."""
    address = zookeeper_address(conn)
    return address, check_servers(address, conn.config.timeout)
