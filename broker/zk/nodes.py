"""What a read of ZooKeeper returns: a znode's stat, a page of its children, the znode itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.decode import wire_value


@dataclass(frozen=True)
class ZStat:
    """A znode's stat, times in ms since the epoch (UTC)."""

    created: int
    modified: int
    version: int  # changes of its data
    cversion: int  # changes of its children
    aversion: int  # changes of its ACL
    data_length: int
    num_children: int
    ephemeral_owner: int | None  # the session that owns an ephemeral node; None for a persistent one
    czxid: int
    mzxid: int
    pzxid: int

    @classmethod
    def of(cls, stat: Any) -> ZStat:
        """From kazoo's ZnodeStat."""
        return cls(
            created=int(stat.ctime),
            modified=int(stat.mtime),
            version=int(stat.version),
            cversion=int(stat.cversion),
            aversion=int(stat.aversion),
            data_length=int(stat.dataLength),
            num_children=int(stat.numChildren),
            ephemeral_owner=int(stat.ephemeralOwner) or None,
            czxid=int(stat.czxid),
            mzxid=int(stat.mzxid),
            pzxid=int(stat.pzxid),
        )

    @property
    def owner_hex(self) -> str | None:
        """The ephemeral owner as ZooKeeper's tools print session ids (``0x1000...``)."""
        return f"0x{self.ephemeral_owner & 0xFFFFFFFFFFFFFFFF:x}" if self.ephemeral_owner is not None else None

    def as_dict(self) -> dict[str, Any]:
        """For the API: 64-bit ids (session, zxids) as hex strings, which JavaScript numbers cannot hold."""
        return {
            "created": self.created,
            "modified": self.modified,
            "version": self.version,
            "cversion": self.cversion,
            "aversion": self.aversion,
            "data_length": self.data_length,
            "num_children": self.num_children,
            "ephemeral_owner": self.owner_hex,
            "czxid": f"0x{self.czxid:x}",
            "mzxid": f"0x{self.mzxid:x}",
            "pzxid": f"0x{self.pzxid:x}",
        }


# ZooKeeper's permission bits, in the order its tools print them (``cdrwa``).
PERMS = (("create", 4), ("delete", 8), ("read", 1), ("write", 2), ("admin", 16))


@dataclass(frozen=True)
class ZAcl:
    """One entry of a znode's ACL: who (``scheme``, ``id``) may do what (``perms``, by name)."""

    scheme: str
    id: str
    perms: tuple[str, ...]

    @classmethod
    def of(cls, acl: Any) -> ZAcl:
        """From kazoo's ACL."""
        bits = int(acl.perms)
        return cls(str(acl.id.scheme), str(acl.id.id), tuple(name for name, bit in PERMS if bits & bit))

    @property
    def letters(self) -> str:
        """The permissions as ZooKeeper's tools print them: ``cdrwa``, ``r``..."""
        return "".join(name[0] for name in self.perms)

    def as_dict(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "id": self.id, "perms": list(self.perms)}


@dataclass(frozen=True)
class Child:
    """One child of a znode; the figures are None when its stat was not asked for (or it vanished, or its
    ACL does not let the console read it)."""

    name: str
    path: str
    num_children: int | None = None
    data_length: int | None = None
    ephemeral: bool | None = None


@dataclass(frozen=True)
class ChildPage:
    """A page of a znode's children, in name order (trailing numbers numerically), and how many it has."""

    parent: str
    children: tuple[Child, ...]
    total: int
    offset: int
    limit: int

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.children]

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.limit if self.offset + self.limit < self.total else None

    @property
    def prev_offset(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    @property
    def last_offset(self) -> int:
        return max(0, (self.total - 1) // self.limit * self.limit)

    @property
    def first_row(self) -> int:
        return self.offset + 1 if self.children else 0

    @property
    def last_row(self) -> int:
        return self.offset + len(self.children)


@dataclass(frozen=True)
class ZNode:
    """A znode: its data (None when it holds more than the console reads: see ``too_large``),
    its stat, a page of its children, and its ACL (None when ZooKeeper did not let the console read it)."""

    path: str
    data: bytes | None
    too_large: bool
    stat: ZStat
    children: ChildPage
    acl: tuple[ZAcl, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        wire = wire_value(None if self.too_large else self.data)
        return {
            "path": self.path,
            "data": wire["data"],
            "data_encoding": wire["encoding"],
            "data_too_large": self.too_large,
            "stat": self.stat.as_dict(),
            "children": self.children.names,
            "children_total": self.children.total,
            "offset": self.children.offset,
            "limit": self.children.limit,
            "acl": None if self.acl is None else [a.as_dict() for a in self.acl],
        }
