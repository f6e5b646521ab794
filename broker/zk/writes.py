"""Changing znodes: create one, set its data, delete it (and, when asked, everything under it).

Writes are off unless the cluster's ``zookeeper_writes`` setting turns them on, and a read-only
cluster refuses them whatever that setting says. Each change is checked before anything is sent: the
path, the data's size, and whether it touches a znode Kafka depends on (:data:`PROTECTED`). Changes are
optimistic: setting and deleting name the version they were made against, and ZooKeeper refuses them
when someone changed the znode since (ZNodeChanged). A recursive delete is one ZooKeeper transaction:
everything under the znode goes, or nothing does. New znodes are persistent, with ZooKeeper's open ACL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    NoAuthError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.security import ACL, CREATOR_ALL_ACL, READ_ACL_UNSAFE

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.errors import AlreadyExists, InvalidInput, KafkaRefused, KazamiError
from broker.zk.client import ZNodeNotFound, ZNodeNotWritable, _Reads, zookeeper_address
from broker.zk.nodes import ZStat
from broker.zk.paths import check_path, child_path, parent_path

# ZooKeeper drops the connection of a request larger than its jute.maxbuffer (1 MiB unless changed):
# the data of one write stays below it, with room for the path and the request's header.
MAX_WRITE = 1_000_000
# A recursive delete removes at most this many znodes, in one transaction of at most MAX_BATCH bytes
# of paths (the transaction is one request, bounded by jute.maxbuffer too).
MAX_RECURSIVE = 1000
MAX_BATCH = 512 * 1024

# Znodes the console never deletes, nor anything above or below them, and why. The paths are those the
# brokers see (under the chroot, if any).
PROTECTED: tuple[tuple[str, str], ...] = (
    ("/zookeeper", "it is ZooKeeper's own (quotas and its configuration), not Kafka's"),
    (
        "/brokers/ids",
        "each broker's registration is an ephemeral znode its own session keeps: deleted, the controller "
        "takes the broker for gone while it still runs (its partitions get new leaders, it drops out of "
        "every ISR). Stop the broker instead",
    ),
    (
        "/brokers/topics",
        "it holds each topic's replica assignment and each partition's leader and ISR, which the controller "
        "keeps; removed behind its back, the topic is left half there. Delete a topic through Kafka (its "
        "topic page) instead",
    ),
    (
        "/cluster/id",
        "every broker checks the cluster id at start against the one in its log dirs: a new id would be made "
        "and the brokers would refuse to start",
    ),
    (
        "/controller_epoch",
        "the controller epoch fences off a controller that lost its post: reset, the brokers may follow a "
        "stale controller",
    ),
    (
        "/latest_producer_id_block",
        "it is where producer ids are handed out from: deleted, ids in use would be handed out again and "
        "idempotent and transactional producers would collide",
    ),
    ("/migration", "it records a ZooKeeper-to-KRaft migration under way, which would be left broken"),
)
# Znodes whose registrations the brokers write themselves: the console neither creates nor changes them.
BROKERS_ONLY = "/brokers/ids"

# Deletes that are allowed but do something the user should know first.
WARNINGS = {
    "/controller": (
        "Deleting /controller makes the brokers elect a new controller: this is how a controller election "
        "is forced in ZooKeeper mode. Until the new controller has loaded the cluster's state (seconds on a "
        "large cluster), leader elections, ISR changes and topic changes wait."
    ),
}


class ZooKeeperWritesOff(KazamiError):
    """The cluster does not allow changes to its ZooKeeper through the console."""


class ZNodeProtected(KazamiError):
    """The change would touch a znode Kafka depends on; the message says which and why."""


class ZNodeChanged(KazamiError):
    """The znode changed since the version the change was made against (or while it was being made)."""


class ZNodeHasChildren(KazamiError):
    """Deleting a znode that has children, without asking for a recursive delete."""


class ZNodeExists(AlreadyExists):
    """Creating a znode that is there already."""


@dataclass(frozen=True)
class Deleted:
    """What a delete removed: the znode and, recursively, how many under it."""

    path: str
    count: int


# ---------------------------------------------------------------- checks (no ZooKeeper needed)


def check_writes(config: ClusterConfig) -> None:
    """Raise ZooKeeperWritesOff unless the cluster lets the console change its ZooKeeper."""
    if config.read_only:
        raise ZooKeeperWritesOff(
            f"Cluster {config.name!r} is read-only: the console changes nothing on it, ZooKeeper included."
        )
    if not config.zookeeper_writes:
        raise ZooKeeperWritesOff(
            f"Writes to ZooKeeper are turned off for cluster {config.name!r}: set zookeeper_writes "
            "(ZOOKEEPER_WRITES=1 for the default cluster, zookeeper_writes = true in the clusters file) "
            "to let admins create, change and delete znodes."
        )


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def protection(path: str) -> str | None:
    """Why deleting ``path`` is refused (it is, or is under or above, a PROTECTED znode), None when it is
    not. ``path`` is a checked path."""
    if path == "/":
        return "/ (the root) cannot be deleted: it holds everything in ZooKeeper."
    for top, reason in PROTECTED:
        if _within(path, top):
            where = "" if path == top else f" (it lies under {top})"
            return f"{path} cannot be deleted from the console{where}: {reason}."
        if _within(top, path):
            return f"{path} cannot be deleted from the console: it holds {top}, and {reason}."
    return None


def check_delete(path: str) -> str | None:
    """Raise ZNodeProtected when ``path`` may not be deleted; the warning to show before deleting it, if any."""
    refused = protection(path)
    if refused:
        raise ZNodeProtected(refused)
    return WARNINGS.get(path)


def check_change(path: str, creating: bool) -> None:
    """Raise ZNodeProtected when the data of ``path`` may not be set (or ``path`` not be created)."""
    if creating and path == "/":
        raise ZNodeExists("The root always exists.")
    registration = path.startswith(BROKERS_ONLY + "/") or (creating and path == BROKERS_ONLY)
    if registration:
        doing = "created" if creating else "changed"
        raise ZNodeProtected(
            f"{path} cannot be {doing} from the console: broker registrations under {BROKERS_ONLY} are "
            "written by the brokers themselves."
        )
    if creating and _within(path, "/zookeeper"):
        raise ZNodeProtected(f"{path} cannot be created from the console: /zookeeper is ZooKeeper's own.")


def check_data(data: bytes) -> bytes:
    """``data``, unless ZooKeeper would refuse it as too large (InvalidInput)."""
    if len(data) > MAX_WRITE:
        raise InvalidInput(
            f"The data is {len(data):,} bytes; ZooKeeper takes at most about 1 MiB per znode, so the console "
            f"writes at most {MAX_WRITE:,}."
        )
    return data


def check_version(version: Any) -> int:
    """The version a change is made against: a whole number, -1 for whichever version the znode has."""
    if isinstance(version, bool):
        version = None
    try:
        value = int(str(version).strip()) if version is not None else None
    except ValueError:
        value = None
    if value is None or value < -1 or value > 2**31 - 1:
        shown = str(version)[:40]
        raise InvalidInput(
            f"version must be the znode's version the change is made against (a whole number, -1 for "
            f"whichever it has), not {shown!r}."
        )
    return value


# ---------------------------------------------------------------- changes


def _calls(conn: ClusterConnection) -> _Reads:
    check_writes(conn.config)
    return _Reads(conn, zookeeper_address(conn))


def _changed(path: str, expected: int, now: int | None) -> ZNodeChanged:
    if now is None:
        return ZNodeChanged(f"{path} was deleted by someone else meanwhile: nothing was changed.")
    return ZNodeChanged(
        f"{path} was changed by someone else since you read it: it is at version {now} now, not {expected}. "
        "Nothing was changed: read it again and make your change on what it holds now."
    )


def _version_now(calls: _Reads, path: str) -> int | None:
    stat = calls.wait(calls.client.exists_async(path), path)
    return None if stat is None else int(stat.version)


def new_node_acl(setting: str) -> list[ACL] | None:
    """The ACL a created znode gets for the cluster's ``zookeeper_acl`` (None: ZooKeeper's open default).
    ZooKeeper fills the creator's identity in from the session's credentials."""
    if setting == "kafka":
        return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
    if setting == "creator":
        return list(CREATOR_ALL_ACL)
    return None


def create_node(conn: ClusterConnection, path: str, data: bytes) -> ZStat:
    """Create the persistent znode ``path`` holding ``data``; its stat. Raises ZooKeeperWritesOff,
    InvalidInput, ZNodeProtected, ZNodeExists, ZNodeNotFound (no parent), ZNodeNotWritable,
    ZooKeeperUnavailable."""
    path = check_path(path)
    check_change(path, creating=True)
    check_data(data)
    calls = _calls(conn)
    keep = (NodeExistsError, NoNodeError, NoChildrenForEphemeralsError)
    acl = new_node_acl(conn.config.zookeeper_acl)
    try:
        _, stat = calls.wait(calls.client.create_async(path, data, acl=acl, include_data=True), path, True, keep)
    except NodeExistsError:
        raise ZNodeExists(f"{path} exists already: nothing was created.") from None
    except NoNodeError:
        raise calls.not_found(parent_path(path) or "/") from None
    except NoChildrenForEphemeralsError:
        raise InvalidInput(f"{parent_path(path)} is ephemeral, and an ephemeral znode cannot have children.") from None
    return ZStat.of(stat)


def set_node(conn: ClusterConnection, path: str, data: bytes, expected_version: int) -> ZStat:
    """Set the data of ``path``, if it is still at ``expected_version`` (-1: whatever version); its new
    stat. Raises ZooKeeperWritesOff, InvalidInput, ZNodeProtected, ZNodeChanged, ZNodeNotFound,
    ZNodeNotWritable, ZooKeeperUnavailable."""
    path = check_path(path)
    expected_version = check_version(expected_version)
    check_change(path, creating=False)
    check_data(data)
    calls = _calls(conn)
    try:
        stat = calls.wait(calls.client.set_async(path, data, expected_version), path, True, (BadVersionError,))
    except BadVersionError:
        raise _changed(path, expected_version, _version_now(calls, path)) from None
    return ZStat.of(stat)


def delete_node(conn: ClusterConnection, path: str, expected_version: int, recursive: bool = False) -> Deleted:
    """Delete ``path`` if it is still at ``expected_version`` (-1: whatever version); with ``recursive``,
    everything under it too, in one transaction (at most MAX_RECURSIVE znodes). Raises
    ZooKeeperWritesOff, InvalidInput, ZNodeProtected, ZNodeChanged, ZNodeHasChildren, ZNodeNotFound,
    ZNodeNotWritable, ZooKeeperUnavailable."""
    path = check_path(path)
    expected_version = check_version(expected_version)
    check_delete(path)
    calls = _calls(conn)
    stat = calls.wait(calls.client.exists_async(path), path)
    if stat is None:
        raise calls.not_found(path)
    if expected_version != -1 and stat.version != expected_version:
        raise _changed(path, expected_version, int(stat.version))
    children = int(stat.numChildren)
    if children and not recursive:
        raise ZNodeHasChildren(
            f"{path} has {children} child{'ren' if children != 1 else ''}: nothing was deleted. Delete "
            f"{'them' if children != 1 else 'it'} first, or delete recursively."
        )
    below = _descendants(calls, path, children) if children else []
    if not below:
        try:
            calls.wait(calls.client.delete_async(path, expected_version), path, True, (BadVersionError, NotEmptyError))
        except BadVersionError:
            raise _changed(path, expected_version, _version_now(calls, path)) from None
        except NotEmptyError:
            raise ZNodeHasChildren(f"{path} got children meanwhile: nothing was deleted.") from None
        return Deleted(path, 1)
    transaction = calls.client.transaction()
    for p in reversed(below):  # deepest first
        transaction.delete(p)
    transaction.delete(path, expected_version)
    results = calls.wait(transaction.commit_async(), path, True)
    # A transaction that failed answers each operation with an error: the one that failed, and "rolled
    # back" (or "not run") for the others.
    failed = [
        r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError | RuntimeInconsistency)
    ]
    if failed:
        problem = failed[0]
        if isinstance(problem, BadVersionError):
            raise _changed(path, expected_version, _version_now(calls, path))
        if isinstance(problem, NotEmptyError | NoNodeError):
            raise ZNodeChanged(
                f"Znodes under {path} were added or deleted while it was being deleted: nothing was deleted. Try again."
            )
        if isinstance(problem, NoAuthError):
            raise ZNodeNotWritable(
                f"ZooKeeper does not let the console delete everything under {path}: the ACL of a znode there "
                "does not allow the console's session. Nothing was deleted."
            )
        raise KafkaRefused(f"ZooKeeper refused to delete {path}: {problem.__class__.__name__}. Nothing was deleted.")
    return Deleted(path, len(below) + 1)


def _descendants(calls: _Reads, path: str, children: int) -> list[str]:
    """Every znode under ``path``, level by level (parents before their children). Raises InvalidInput when
    there are more than a recursive delete removes at once."""
    found: list[str] = []
    level = [path]
    counts = [children]
    while level:
        total = len(found) + sum(counts)
        if total > MAX_RECURSIVE:
            raise InvalidInput(
                f"{path} holds more than {MAX_RECURSIVE} znodes; the console deletes at most {MAX_RECURSIVE} at "
                "once. Delete parts of it first. Nothing was deleted."
            )
        parents = [p for p, n in zip(level, counts, strict=True) if n]
        listed = _names(calls, parents)
        level = [child_path(p, name) for p in parents for name in listed[p]]
        found += level
        if sum(len(p.encode()) + 16 for p in found) > MAX_BATCH:
            raise InvalidInput(
                f"The paths under {path} are too long to delete in one transaction. Delete parts of it first. "
                "Nothing was deleted."
            )
        stats = [calls.client.exists_async(p) for p in level]
        counts = []
        for p, call in zip(level, stats, strict=True):
            stat = calls.wait(call, p)
            counts.append(int(stat.numChildren) if stat is not None else 0)
    return found


def _names(calls: _Reads, parents: Sequence[str]) -> dict[str, list[str]]:
    """The children of each of ``parents`` (none for one deleted meanwhile: the transaction then fails)."""
    pending = {p: calls.client.get_children_async(p) for p in parents}
    found: dict[str, list[str]] = {}
    for p, call in pending.items():
        try:
            found[p] = sorted(calls.wait(call, p))
        except ZNodeNotFound:
            found[p] = []
    return found
