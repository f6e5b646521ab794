"""Several console processes on one port (console/serve.py), as `make run` and the compose file start it:
every worker serves pages and websockets, a worker that dies is started again while the others answer,
what must be shared (failed logins) is, and a console that cannot start says so and stops."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import pytest

from broker.local import launcher
from console.devserver import REPO, ServedConsole, console_process
from tests.conftest import BOOTSTRAP

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("serving with several workers does not depend on the cluster's mode: run once"),
]

VIEWER = ("serve-viewer", "serve-viewer-password-1")


@pytest.fixture(scope="module")
def served(kafka_cluster: launcher.ClusterLayout) -> Iterator[ServedConsole]:
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
        "ZOOKEEPER_CONNECT": kafka_cluster.zookeeper_connect,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_LAG_SAMPLER": "0",
        "KAZAMI_LIVE_INTERVAL": "0.5",
    }
    with (
        tempfile.TemporaryDirectory(prefix="kazami-serve-") as var,
        console_process(Path(var), settings, {VIEWER[0]: ("viewer", VIEWER[1])}, workers=2) as console,
    ):
        yield console


def workers(console: ServedConsole) -> list[int]:
    return [pid for pid in console.pids() if pid != console.pid]


def health(console: ServedConsole) -> int:
    """The worker that answered /healthz on a new connection."""
    with urllib.request.urlopen(console.url + "/healthz", timeout=5) as response:  # noqa: S310 - loopback
        return int(json.load(response)["worker"])


class Browser:
    """Cookies and the login form, as a browser on the console's pages."""

    def __init__(self, console: ServedConsole) -> None:
        self.url = console.url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect())

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.url + path))  # noqa: S310 - our loopback console

    def log_in(self, username: str, password: str) -> tuple[int, str]:
        _, form = self.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token is not None
        data = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
        ).encode()
        login = urllib.request.Request(self.url + "/login/", data=data, headers={"Referer": self.url})  # noqa: S310
        return self._open(login)

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.jar if c.name == name and c.value is not None)

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=15) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def first_fragment(console: ServedConsole, session: str, path: str) -> str:
    async def receive() -> str:
        async with (
            aiohttp.ClientSession(headers={"Cookie": f"sessionid={session}"}) as http,
            http.ws_connect(console.url.replace("http://", "ws://") + path, origin=console.url) as ws,
        ):
            message = await ws.receive(timeout=20)
            assert message.type is aiohttp.WSMsgType.TEXT, message
            return str(message.data)

    with ThreadPoolExecutor(max_workers=1) as pool:  # Playwright may hold an event loop in this thread
        return pool.submit(asyncio.run, receive()).result()


def wait_for_workers(console: ServedConsole, count: int, other_than: set[int], timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = workers(console)
        if len(now) == count and not set(now) & other_than:
            return now
        time.sleep(0.2)
    raise AssertionError(f"workers {workers(console)}, wanted {count} new ones")


def wait_healthy(console: ServedConsole, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            health(console)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_two_workers_serve_pages_and_websockets_on_one_port(served: ServedConsole) -> None:
    assert len(workers(served)) == 2
    browser = Browser(served)
    assert browser.log_in(*VIEWER)[0] == 302
    status, page = browser.get("/clusters/local/topics/")
    assert status == 200
    assert "Topics" in page
    fragment = first_fragment(served, browser.cookie("sessionid"), "/ws/clusters/local/overview/")
    assert fragment.lstrip().startswith('<section id="overview"')
    seen = {health(served) for _ in range(100)}
    assert seen <= {0, 1}


def test_a_worker_that_dies_is_started_again_while_the_other_answers(served: ServedConsole) -> None:
    before = workers(served)
    os.kill(before[0], signal.SIGKILL)
    answered = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            health(served)
            answered += 1
        except OSError:
            pass  # a connection the dead worker had accepted
        now = workers(served)
        if len(now) == 2 and before[0] not in now:
            break
        time.sleep(0.05)
    assert before[0] not in workers(served)
    assert len(workers(served)) == 2
    assert answered > 0  # the other worker kept answering meanwhile
    wait_healthy(served)


def test_failed_logins_are_counted_across_workers_and_restarts(served: ServedConsole) -> None:
    browser = Browser(served)
    for _ in range(10):
        assert browser.log_in(VIEWER[0], "wrong-password")[0] == 200  # the form again, with an error
    # Every worker replaced: a count kept in one process's memory would be gone.
    old = set(workers(served))
    for pid in old:
        os.kill(pid, signal.SIGKILL)
    wait_for_workers(served, 2, other_than=old)
    wait_healthy(served)
    status, page = Browser(served).log_in(*VIEWER)
    assert status == 429
    assert "Too many failed logins" in page


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console.serve", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_taken_port_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_serve("--port", str(port), "--workers", "1")
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_workers_that_cannot_start_stop_the_console_with_their_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = run_serve("--port", str(port), "--workers", "2", env={"KAZAMI_LIVE_INTERVAL": "often"})
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    assert "KAZAMI_LIVE_INTERVAL" in result.stderr
    assert "failed to start (exit 1); stopping." in result.stderr


def test_the_number_of_workers_must_make_sense() -> None:
    bad = run_serve(env={"KAZAMI_WORKERS": "many"})
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: KAZAMI_WORKERS='many': expected a whole number."
