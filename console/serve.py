"""Serve the console with several Daphne processes sharing one listening socket.

    python -m console.serve --host 127.0.0.1 --port 8888 [--workers N]

One Python process uses at most one core. This supervisor binds the address once and starts
``--workers`` Daphne processes (``KAZAMI_WORKERS``, by default one per core, at most four) that all
accept connections from that socket; the kernel hands each new connection to one of them. A worker
that dies is started again; Ctrl-C or SIGTERM stops them all.

Each worker is a whole console: its own connections to the clusters, its own live pollers (a page's
websocket stays with the worker that accepted it) and its own short-lived shared reads. What must be
shared lives in the database: sessions, the audit log, lag samples (one worker samples, by lease),
the failed-login counts (Django's database cache).

Twisted has no endpoint for a plain inherited descriptor; it adopts sockets the way systemd passes
them (``LISTEN_FDS``, ``LISTEN_FDNAMES``, ``LISTEN_PID``; first descriptor 3), so each worker moves the socket there and
listens on ``systemd:domain=INET:index=0``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from broker.errors import ConfigError
from console.config.env import env_int

APPLICATION = "console.asgi:application"
SYSTEMD_FIRST_FD = 3
MAX_WORKERS = 4
# A worker that exits with an error this soon after starting failed to start (settings, database): stop
# rather than start it again and again.
STARTUP_S = 10.0


def default_workers() -> int:
    """KAZAMI_WORKERS, else one per core (at most MAX_WORKERS); SystemExit with one line when malformed."""
    try:
        return env_int("KAZAMI_WORKERS", min(MAX_WORKERS, len(os.sched_getaffinity(0))), minimum=1)
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None


def listen(host: str, port: int) -> socket.socket:
    """The shared listening socket (IPv4 or IPv6 by ``host``); SystemExit with one line when taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise SystemExit(f"error: cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


class Supervisor:
    def __init__(self, sock: socket.socket, workers: int, daphne_args: Sequence[str]) -> None:
        self.sock = sock
        self.workers = workers
        self.daphne_args = list(daphne_args)
        self.children: dict[int, tuple[subprocess.Popen[bytes], float]] = {}  # slot -> (process, started)
        self.stopping = False

    def spawn(self, slot: int) -> None:
        family = "INET6" if self.sock.family == socket.AF_INET6 else "INET"
        command = [sys.executable, "-m", "console.serve", "--worker-fd", str(self.sock.fileno())]
        command += ["--family", family, "--", *self.daphne_args]
        env = {**os.environ, "KAZAMI_WORKER": str(slot)}
        # Django runs each request's view on a thread of its own; glibc's default of up to eight malloc
        # arenas per core then lets RSS creep up for a long while under load (see the load benchmark).
        env.setdefault("MALLOC_ARENA_MAX", "2")
        process = subprocess.Popen(command, pass_fds=(self.sock.fileno(),), env=env)
        self.children[slot] = (process, time.monotonic())

    def stop(self, *_: object) -> None:
        self.stopping = True
        for process, _started in self.children.values():
            if process.poll() is None:
                process.terminate()

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        for slot in range(self.workers):
            self.spawn(slot)
        print(f"Serving with {self.workers} worker process(es).", flush=True)
        code = 0
        while not self.stopping:
            time.sleep(0.2)
            for slot, (process, started) in list(self.children.items()):
                status = process.poll()
                if status is None or self.stopping:
                    continue
                if time.monotonic() - started < STARTUP_S and status > 0:  # not killed: failed by itself
                    print(f"error: worker {slot} failed to start (exit {status}); stopping.", file=sys.stderr)
                    code = status
                    self.stop()
                    break
                print(f"worker {slot} exited ({status}); starting it again.", file=sys.stderr, flush=True)
                self.spawn(slot)
        deadline = time.monotonic() + 10
        for process, _started in self.children.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return code


def worker(fd: int, family: str, daphne_args: Sequence[str]) -> None:
    """Run Daphne on the inherited listening socket ``fd`` (never returns normally)."""
    if fd != SYSTEMD_FIRST_FD:
        try:
            os.fstat(SYSTEMD_FIRST_FD)
        except OSError:
            pass
        else:
            raise SystemExit(f"error: descriptor {SYSTEMD_FIRST_FD} is in use; cannot adopt the socket")
        os.dup2(fd, SYSTEMD_FIRST_FD)
        os.close(fd)
    # Read by Twisted when its endpoints module is imported: set before importing Daphne.
    os.environ.update(LISTEN_FDS="1", LISTEN_FDNAMES="kazami", LISTEN_PID=str(os.getpid()))
    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(["-e", f"systemd:domain={family}:index=0", *daphne_args, APPLICATION])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--workers", type=int, default=None, help="Daphne processes (KAZAMI_WORKERS, or one per core)")
    parser.add_argument("--worker-fd", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--family", default="INET", help=argparse.SUPPRESS)
    parser.add_argument("daphne_args", nargs="*", help="passed to each Daphne (after --), e.g. --proxy-headers")
    args = parser.parse_args(argv)
    if args.worker_fd is not None:
        worker(args.worker_fd, args.family, args.daphne_args)
        return 0
    workers = args.workers if args.workers is not None else default_workers()
    if workers < 1:
        parser.error("--workers must be at least 1")
    return Supervisor(listen(args.host, args.port), workers, args.daphne_args).run()


if __name__ == "__main__":
    sys.exit(main())
