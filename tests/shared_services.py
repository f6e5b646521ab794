"""PostgreSQL and Redis as a team's deployment shares them between console instances, run by the tests as their own
processes on loopback ports from Debian's packages (`make system-deps` installs postgresql and redis-server): no
system service is started or used. Each is started in a folder of its own and stopped (data removed) afterwards.
``server_process`` is how the tests run such a server (also the OpenLDAP and OpenID Connect servers beside this)."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from console.devserver import free_port

START_TIMEOUT_S = 60


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: `make system-deps` installs Debian's postgresql package.")
    return Path(found[-1]).parent


def _as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, its commands run as the ``postgres`` user the package made."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL server of its own with an empty database ``kazami``; yields its URL (no password: trust on
    loopback)."""
    bin_dir = _postgres_bin()
    home = Path(tempfile.mkdtemp(prefix="kazami-postgres-"))
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (home, sockets):
            os.chown(path, user.pw_uid, user.pw_gid)
    port = free_port()
    log = home / "postgres.log"

    def run(*command: str) -> None:
        done = subprocess.run(
            _as_postgres_user(list(command)), capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stderr[-2000:] or done.stdout[-2000:]}")

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "kazami", "-A", "trust", "--no-sync", "-E", "UTF8")
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(log),
        "-w",
        "-t",
        str(START_TIMEOUT_S),
        "start",
    )
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "kazami", "kazami")
        yield f"postgres://kazami@127.0.0.1:{port}/kazami"
    finally:
        subprocess.run(
            _as_postgres_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def redis() -> Iterator[str]:
    """A Redis server of its own, nothing saved to disk; yields its URL."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("Redis is not installed: `make system-deps` installs Debian's redis-server package.")
    home = Path(tempfile.mkdtemp(prefix="kazami-redis-"))
    port = free_port()
    command = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(home),
    ]
    with server_process(command, home, "redis-server", lambda: _answers(port)):
        yield f"redis://127.0.0.1:{port}/0"


@contextlib.contextmanager
def server_process(
    command: list[str], home: Path, name: str, ready: Callable[[], bool], env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A server of the test's own: ``command`` run with its output in ``home/<name>.log`` until ``ready()`` says it
    answers (RuntimeError with the log's end if it exits or START_TIMEOUT_S pass first); stopped, and ``home``
    removed, afterwards."""
    log_path = home / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(home, ignore_errors=True)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False
