"""ZooKeeper's own health from its four-letter words: ``srvr`` (mode, znode count, latency, outstanding
requests) and ``mntr`` (the same and the watch count), asked of each server of a connect string.

A server answers a word it does not allow (``4lw.commands.whitelist``) with a sentence saying so, and
a server without a quorum says it is not serving; both are reported as such, never as a failure.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from broker.errors import ConfigError
from broker.zk.paths import split_connect

MAX_REPLY = 1024 * 1024
NOT_SERVING = b"not currently serving requests"
NOT_ALLOWED = b"is not executed because it is not in the whitelist"


def ask(host: str, port: int, word: str, timeout: float) -> bytes:
    """The server's whole reply to ``word`` (at most 1 MiB), within ``timeout`` seconds in all. Raises
    OSError (refused, unreachable, timed out)."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=max(0.01, timeout)) as s:
        s.sendall(word.encode("ascii"))
        reply = b""
        while len(reply) < MAX_REPLY:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply


def parse_srvr(reply: str) -> dict[str, str]:
    """``srvr``'s ``Key: value`` lines as a dict (keys as written: ``Mode``, ``Node count`` ...)."""
    found: dict[str, str] = {}
    for line in reply.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            found[key.strip()] = value.strip()
    return found


def parse_mntr(reply: str) -> dict[str, str]:
    """``mntr``'s tab-separated ``zk_name<TAB>value`` lines as a dict."""
    found: dict[str, str] = {}
    for line in reply.splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            found[key.strip()] = value.strip()
    return found


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ServerHealth:
    """One ZooKeeper server as its four-letter words describe it; None where it did not say."""

    address: str
    answered: bool  # it accepted a connection and replied
    serving: bool | None  # False: up but without a quorum (or still starting)
    mode: str | None = None  # leader, follower, observer, standalone, read-only
    version: str | None = None
    znode_count: int | None = None
    watch_count: int | None = None
    outstanding: int | None = None
    connections: int | None = None
    latency_min: float | None = None
    latency_avg: float | None = None
    latency_max: float | None = None
    not_allowed: tuple[str, ...] = ()  # words the server refused (4lw.commands.whitelist)
    error: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # a leader's followers, synced followers

    @property
    def note(self) -> str | None:
        """What a reader should know beyond the figures, in a sentence (None when all is said)."""
        if self.error:
            return self.error
        if self.serving is False:
            return "It runs but does not serve requests: it has no quorum (or is still starting)."
        if len(self.not_allowed) == 2:
            return "srvr and mntr are not allowed by this server: add them to 4lw.commands.whitelist to see its health."
        if self.not_allowed:
            word = self.not_allowed[0]
            return f"{word} is not allowed by this server, so figures are missing: add it to 4lw.commands.whitelist."
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "answered": self.answered,
            "serving": self.serving,
            "mode": self.mode,
            "version": self.version,
            "znode_count": self.znode_count,
            "watch_count": self.watch_count,
            "outstanding_requests": self.outstanding,
            "connections": self.connections,
            "latency_ms": {"min": self.latency_min, "avg": self.latency_avg, "max": self.latency_max},
            "not_allowed": list(self.not_allowed),
            "note": self.note,
            **({"followers": self.extra} if self.extra else {}),
        }


def health_from(address: str, srvr: bytes | None, mntr: bytes | None, error: str | None = None) -> ServerHealth:
    """The health of one server from its raw replies (None: not asked or no answer). Pure."""
    if srvr is None and mntr is None:
        return ServerHealth(address, answered=False, serving=None, error=error or "It does not answer.")
    if NOT_SERVING in (srvr or b"") or NOT_SERVING in (mntr or b""):
        return ServerHealth(address, answered=True, serving=False)
    refused = tuple(w for w, r in (("srvr", srvr), ("mntr", mntr)) if r is not None and NOT_ALLOWED in r)
    s = parse_srvr(srvr.decode("utf-8", "replace")) if srvr and "srvr" not in refused else {}
    m = parse_mntr(mntr.decode("utf-8", "replace")) if mntr and "mntr" not in refused else {}
    if not s and not m and not refused:
        return ServerHealth(address, answered=True, serving=None, error=error or "Its replies say nothing readable.")
    latency = (s.get("Latency min/avg/max") or "").split("/")
    version = m.get("zk_version") or s.get("Zookeeper version")
    return ServerHealth(
        address,
        answered=True,
        serving=True if (s or m) else None,
        mode=m.get("zk_server_state") or s.get("Mode"),
        version=version.split("-", 1)[0].split(",", 1)[0].strip() if version else None,
        znode_count=_int(m.get("zk_znode_count") or s.get("Node count")),
        watch_count=_int(m.get("zk_watch_count")),
        outstanding=_int(m.get("zk_outstanding_requests") or s.get("Outstanding")),
        connections=_int(m.get("zk_num_alive_connections") or s.get("Connections")),
        latency_min=_float(m.get("zk_min_latency") or (latency[0] if len(latency) == 3 else None)),
        latency_avg=_float(m.get("zk_avg_latency") or (latency[1] if len(latency) == 3 else None)),
        latency_max=_float(m.get("zk_max_latency") or (latency[2] if len(latency) == 3 else None)),
        not_allowed=refused,
        extra={k[3:]: v for k, v in m.items() if k in ("zk_followers", "zk_synced_followers")},
    )


def _check_one(host: str, port: int, deadline: float) -> ServerHealth:
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    replies: dict[str, bytes | None] = {"srvr": None, "mntr": None}
    error = None
    for word in replies:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            error = error or "It did not answer in time."
            break
        try:
            replies[word] = ask(host, port, word, remaining)
        except TimeoutError:
            error = "It did not answer in time."
            break
        except OSError as exc:
            error = f"It does not answer ({exc.strerror or exc.__class__.__name__})."
            break
    return health_from(address, replies["srvr"], replies["mntr"], error)


def check_servers(connect: str, timeout: float) -> list[ServerHealth]:
    """The health of every server of ``connect``, asked in parallel; takes at most ``timeout`` seconds
    (plus thread start-up). Raises ConfigError for a malformed connect string."""
    servers, _ = split_connect(connect)
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(max_workers=len(servers), thread_name_prefix="zk-4lw") as pool:
        return list(pool.map(lambda hp: _check_one(hp[0], hp[1], deadline), servers))


def serving(connect: str, timeout: float) -> bool:
    """True when a server of ``connect`` serves requests, judged by its answer to ``srvr``: a server
    without a quorum says it does not serve; one that does not allow the word still answers, and counts
    as serving. Takes at most ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    try:
        servers, _ = split_connect(connect)
    except ConfigError:
        return False
    for host, port in servers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            reply = ask(host, port, "srvr", remaining)
        except OSError:
            continue
        if reply and NOT_SERVING not in reply:
            return True
    return False
