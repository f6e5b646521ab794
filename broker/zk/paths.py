"""Znode paths and ZooKeeper connect strings, checked and taken apart (pure functions)."""

from __future__ import annotations

import re

from broker.errors import ConfigError, InvalidInput

MAX_PATH = 4096
DEFAULT_PORT = 2181
# Characters ZooKeeper refuses in a path: NUL, C0 and C1 controls, surrogates and the private-use
# area, and the specials block (U+FFF0-U+FFFF).
_FORBIDDEN = re.compile("[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]")
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def check_path(raw: str) -> str:
    """The znode path ``raw`` names, as ZooKeeper spells it: absolute, no empty, ``.`` or ``..`` segment,
    no control character. Surrounding blanks and one trailing ``/`` are dropped (a pasted
    ``/brokers/ids/`` is ``/brokers/ids``). Raises InvalidInput saying what is wrong."""
    path = raw.strip()
    if not path:
        raise InvalidInput("The path is empty: a znode path starts with / (the root is /).")
    if len(path) > MAX_PATH:
        raise InvalidInput(f"The path is {len(path)} characters long; at most {MAX_PATH} are accepted.")
    if not path.startswith("/"):
        raise InvalidInput(f"The path {path[:80]!r} is not absolute: a znode path starts with /.")
    if len(path) > 1 and path.endswith("/") and not path.endswith("//"):
        path = path[:-1]
    found = _FORBIDDEN.search(path)
    if found:
        raise InvalidInput(
            f"The path holds a character ZooKeeper does not allow (U+{ord(found.group()):04X} at "
            f"position {found.start()})."
        )
    if path == "/":
        return path
    for segment in path[1:].split("/"):
        if segment == "":
            raise InvalidInput(f"The path {path[:80]!r} has an empty segment (//).")
        if segment in (".", ".."):
            raise InvalidInput(f"The path {path[:80]!r} has a {segment!r} segment: ZooKeeper paths are never relative.")
    return path


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def parent_path(path: str) -> str | None:
    """The parent of ``path``; None for the root."""
    if path == "/":
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def ancestors(path: str) -> list[str]:
    """``/``, then each path down to ``path`` itself: ``/a/b`` -> ``["/", "/a", "/a/b"]``."""
    found = ["/"]
    if path != "/":
        parts = path[1:].split("/")
        found += ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
    return found


def crumbs(path: str) -> list[tuple[str, str]]:
    """(name, path) of each segment, for a breadcrumb: ``/a/b`` -> ``[("a", "/a"), ("b", "/a/b")]``."""
    return [(p.rsplit("/", 1)[1], p) for p in ancestors(path)[1:]]


def name_order(name: str) -> tuple[str, int, str]:
    """Sort key that puts a trailing number in numeric order: broker ``2`` before ``10``,
    ``isr_change_0000000009`` before ``isr_change_0000000010``; other names alphabetically."""
    numbered = _NUMBERED.match(name)
    if numbered:
        return numbered.group(1), int(numbered.group(2)), name
    return name, -1, name


def split_connect(connect: str) -> tuple[list[tuple[str, int]], str | None]:
    """``host:port,host:port[/chroot]`` -> ([(host, port), ...], chroot or None). A host without a port
    gets 2181; IPv6 hosts are written ``[::1]:2181``. Raises ConfigError for a malformed string."""
    hosts_part, slash, chroot = connect.strip().partition("/")
    servers: list[tuple[str, int]] = []
    for entry in hosts_part.split(","):
        entry = entry.strip()
        if not entry:
            continue
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        elif entry.count(":") == 1:
            host, _, port_text = entry.partition(":")
        else:
            host, port_text = entry, ""
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ConfigError(f"ZooKeeper connect string {connect!r}: {entry!r} has no valid port.") from None
        if not host or not 0 < port < 65536:
            raise ConfigError(f"ZooKeeper connect string {connect!r}: {entry!r} is not host:port.")
        servers.append((host, port))
    if not servers:
        raise ConfigError(f"ZooKeeper connect string {connect!r} names no server.")
    root = "/" + chroot.strip("/") if slash and chroot.strip("/") else None
    return servers, root
