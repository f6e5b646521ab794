"""The embedded cluster's JVM processes: Java itself, starting a process in a session of its own, stopping
it, knowing it again by its pid, and asking a port whether ZooKeeper or a broker answers there."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.local.configs import logging_flag
from broker.local.layout import ClusterLayout, LauncherError
from broker.processes import running

HERE = Path(__file__).resolve().parent
BROKER_HEAP = "-Xmx384m -Xms128m"
CONTROLLER_HEAP = "-Xmx192m -Xms64m"
ZOOKEEPER_HEAP = "-Xmx128m -Xms64m"
# Fast JVM start and a small footprint: several brokers share two cores here.
JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.awt.headless=true"
# Every release's jars folder (jars/, jars-4.3.0/) starts with this: how a pid is known for one of ours.
JARS_MARKER = str(HERE / "jars").encode()


def check_java() -> str:
    """Path of a Java 17+ ``java``; raises LauncherError saying what to install otherwise."""
    java = shutil.which("java")
    if java is None:
        raise LauncherError(
            "Java 17 or newer is needed to run Kafka: install it (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    version = java_major(out)
    if version is not None and version < 17:
        raise LauncherError(f"Java {version} found at {java}; Kafka here needs Java 17 or newer.")
    return java


def java_major(version_output: str) -> int | None:
    for token in version_output.split('"')[1:2]:
        head = token.split(".")[0]
        if head == "1":  # 1.8.0_x
            return int(token.split(".")[1])
        if head.isdigit():
            return int(head)
    return None


def pid_alive(pid: int | None) -> bool:
    """True when ``pid`` is a JVM started from our jars that still runs (a recycled pid is not ours)."""
    return running(pid, JARS_MARKER)


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def zookeeper_serving(port: int, timeout: float = 1.0) -> bool:
    """True when ZooKeeper answers the ``srvr`` command as a serving server (not merely listening)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"srvr")
            s.settimeout(timeout)
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
    except OSError:
        return False
    return b"Mode:" in reply


def broker_answers(port: int, timeout: float = 1.0) -> bool:
    """True when the broker on ``port`` answers a Kafka request (ApiVersions v0), not merely accepts
    connections: a broker registers in ZooKeeper before it starts serving requests."""
    client_id = b"kazami-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            header = s.recv(8)
    except OSError:
        return False
    return len(header) == 8 and struct.unpack(">ii", header)[1] == 1


def spawn(
    layout: ClusterLayout,
    name: str,
    main_class: str,
    props: Path,
    heap: str,
    run_as: tuple[int, int] | None = None,
) -> int:
    """Start a JVM of the cluster in a session of its own; its pid. With ``run_as`` (uid, gid), the process runs
    as that user and group with no extra groups (switched by Python in the child before exec), and its log
    folder is that user's."""
    java = check_java()
    log_dir = layout.root / "logs" / name
    log_dir.mkdir(parents=True, exist_ok=True)
    switch: dict[str, Any] = {}
    if run_as is not None:
        uid, gid = run_as
        for path in [log_dir, *log_dir.rglob("*")]:
            os.chown(path, uid, gid)
        switch = {"user": uid, "group": gid, "extra_groups": []}
    cmd = [
        java,
        *heap.split(),
        *JVM_FLAGS.split(),
        f"-Dkafka.logs.dir={log_dir}",
        logging_flag(layout),
        "-cp",
        layout.release.classpath,
        main_class,
        str(props),
    ]
    out = open(layout.root / "logs" / f"{name}.out", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        cmd,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=str(layout.root),
        **switch,
    )
    out.close()
    return proc.pid


def stop_pid(pid: int | None, timeout: float) -> None:
    if not pid_alive(pid):
        return
    assert pid is not None
    if timeout > 0:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    while pid_alive(pid):
        time.sleep(0.05)


def wait(predicate: Callable[[], bool], timeout: float, what: str, layout: ClusterLayout) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise LauncherError(f"Timed out after {timeout:.0f} s waiting for {what}; see the logs in {layout.root / 'logs'}.")
