"""A real console (Daphne in a subprocess) for tests and benchmarks: migrated, healthy, then stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class ServedConsole:
    url: str  # http://127.0.0.1:<port>
    pid: int  # of the serving process (console.serve, which starts the Daphne workers)
    log: Path

    def pids(self) -> list[int]:
        """The serving process and its workers (e.g. to read their memory from /proc/<pid>/status)."""
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            with suppress(OSError):
                todo += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return found


@contextmanager
def running_console(
    var: Path, settings: dict[str, str], users: dict[str, tuple[str, str]] | None = None, workers: int = 1
) -> Iterator[str]:
    """Serve the console on a free loopback port with ``settings`` (environment variables) over the
    current environment, its database and files in ``var``, with ``users`` (name -> (role, password)),
    by ``workers`` Daphne processes (console.serve); yields its base URL. Raises RuntimeError when it
    does not answer /healthz within 30 s (its log is var/daphne.log)."""
    with console_process(var, settings, users, workers) as served:
        yield served.url


@contextmanager
def console_process(
    var: Path,
    settings: dict[str, str],
    users: dict[str, tuple[str, str]] | None = None,
    workers: int = 1,
    start_timeout: float = 30,
) -> Iterator[ServedConsole]:
    """:func:`running_console`, yielding the process's pid and log too; ``start_timeout``: how long to wait
    for /healthz (a loaded machine may need more than the default)."""
    # Not the Spark Connect mode of the process that starts it (a test process with a Connect session): the
    # console's live query runs a classic Spark.
    inherited = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    env = {
        **inherited,
        "KAZAMI_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        **settings,
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    for name, (role, password) in (users or {}).items():
        command = [sys.executable, "manage.py", "add_user", name, "--role", role, "--password-stdin"]
        subprocess.run(command, cwd=REPO, env=env, check=True, input=password + "\n", text=True, capture_output=True)
    port = free_port()
    log = open(var / "daphne.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    server = subprocess.Popen(
        [sys.executable, "-m", "console.serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2):  # noqa: S310 - our own loopback server
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the console did not start; see {var / 'daphne.log'}") from None
                time.sleep(0.2)
        yield ServedConsole(url=url, pid=server.pid, log=var / "daphne.log")
    finally:
        served = ServedConsole(url=url, pid=server.pid, log=var / "daphne.log")
        children = [pid for pid in served.pids() if pid != server.pid]
        server.terminate()
        try:
            # The serving process gives its workers 10 s to stop, then kills them: wait a little longer.
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            for pid in children:  # killed with it: no worker left behind, still holding the port
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            server.kill()
            server.wait(timeout=10)
        log.close()
