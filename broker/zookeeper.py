"""ZooKeeper as the console sees it: for now, only whether it serves."""

from __future__ import annotations

import socket
import time


def zookeeper_serving(connect: str, timeout: float) -> bool:
    """True when a server of ``connect`` ("host:port,host:port[/chroot]") serves requests, judged by its
    answer to the ``srvr`` command: a server without a quorum says it is not serving; one that does not
    allow the command still answers, and counts as serving. Takes at most ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    for entry in connect.split("/", 1)[0].split(","):
        host, _, port = entry.strip().rpartition(":")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=remaining) as s:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                s.sendall(b"srvr")
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
        except (OSError, ValueError):
            continue
        if reply and b"not currently serving" not in reply:
            return True
    return False
