"""Issue 26, through a real console process (console.serve, Daphne): failed logins are counted per person however
the name is spelled and per address, passwords are held to the policy wherever one is set, and websockets are
opened only by the console's own origin, with refusals that close with the documented codes (never a bare 403).

Every browser here connects from an address of its own (127.0.0.N: the console sees it as REMOTE_ADDR), so that
the per-address count of one test does not lock another out."""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import aiohttp
import pytest

from broker.local import launcher
from console.devserver import REPO, ServedConsole, console_process
from tests.conftest import BOOTSTRAP

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("login limits does not depend on the cluster's mode: run once"),
]

LOCK_SECONDS = 30  # KAZAMI_LOGIN_LOCK_SECONDS of the console under test (the default is 15 minutes)
ADDRESS_FAILURES = 12  # KAZAMI_LOGIN_ADDRESS_FAILURES (the default is 50)
TARGET = ("sec-brute", "brute-target-pass-26")
BYSTANDER = ("bystander", "lantern-orbit-5521")
ADDR_USER = ("addr-user", "river-stone-kettle-8")
ADMIN = ("limits-admin", "copper-harbour-tide-3")
VIEWER = ("ws-viewer", "socket-watching-42")
USERS = {name: (role, password) for role, (name, password) in [
    ("viewer", TARGET), ("viewer", BYSTANDER), ("viewer", ADDR_USER), ("admin", ADMIN), ("viewer", VIEWER)
]}  # fmt: skip


@pytest.fixture(scope="module")
def served(kafka_cluster: launcher.ClusterLayout) -> Iterator[ServedConsole]:
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
        "ZOOKEEPER_CONNECT": kafka_cluster.zookeeper_connect,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_LAG_SAMPLER": "0",
        "KAZAMI_LOGIN_LOCK_SECONDS": str(LOCK_SECONDS),
        "KAZAMI_LOGIN_ADDRESS_FAILURES": str(ADDRESS_FAILURES),
    }
    with (
        tempfile.TemporaryDirectory(prefix="kazami-limits-") as var,
        console_process(Path(var), settings, USERS) as console,  # add_user: every password passes the policy
    ):
        yield console


class Browser:
    """A browser on the console's pages from one loopback address, with its cookies."""

    def __init__(self, console: ServedConsole, address: str) -> None:
        self.url = urlsplit(console.url)
        self.address = address
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        assert self.url.hostname is not None
        connection = http.client.HTTPConnection(
            self.url.hostname, self.url.port, timeout=120, source_address=(self.address, 0)
        )
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read().decode()
            for cookie in response.headers.get_all("Set-Cookie") or []:
                name, _, rest = cookie.partition("=")
                self.cookies[name] = rest.split(";", 1)[0]
            return response.status, text
        finally:
            connection.close()

    def post_form(self, path: str, form: dict[str, str]) -> tuple[int, str]:
        """Post ``form`` the way the page at ``path`` does (with its CSRF token)."""
        _, page = self.request("GET", path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None, page[:500]
        return self.request("POST", path, {**form, "csrfmiddlewaretoken": token.group(1)})

    def log_in(self, username: str, password: str) -> int:
        status, page = self.post_form("/login/", {"username": username, "password": password})
        if status == 429:
            assert "Too many failed logins; try again in" in page
        elif status == 200:
            assert "do not match" in page  # Django's error: a failure, counted
        return status


# --- failed logins ---------------------------------------------------------------------------------------------


def test_look_alike_spellings_of_a_name_share_one_lockout_which_ends(served: ServedConsole) -> None:
    attacker = Browser(served, "127.0.0.11")
    spellings = ["ｓec-brute", "sec－brute", "𝐬ec-brute", "SEC-BRUTE", " sec-brute"]  # full-width, maths, case
    for attempt in range(10):
        assert attacker.log_in(spellings[attempt % len(spellings)], "not-the-password") == 200
    assert attacker.log_in(*TARGET) == 429  # the right password, refused
    assert "sessionid" not in attacker.cookies
    # The lock is the name's, not this address's: refused from anywhere, while another user logs in from here.
    assert Browser(served, "127.0.0.12").log_in(*TARGET) == 429
    assert Browser(served, "127.0.0.12").log_in("ｓec-brute", TARGET[1]) == 429
    assert attacker.log_in(*BYSTANDER) == 302
    # Refused tries do not count: the lock ends KAZAMI_LOGIN_LOCK_SECONDS after the last failure.
    deadline = time.monotonic() + LOCK_SECONDS + 120
    while (status := Browser(served, "127.0.0.11").log_in(*TARGET)) == 429:
        assert time.monotonic() < deadline, "the lock did not end"
        time.sleep(2)
    assert status == 302


def test_one_address_is_locked_out_after_its_failures_over_many_names(served: ServedConsole) -> None:
    spraying = Browser(served, "127.0.0.21")
    for n in range(ADDRESS_FAILURES):  # one try per name: no name is near its own limit
        assert spraying.log_in(f"guess-{n}", "not-the-password") == 200
    assert spraying.log_in(*ADDR_USER) == 429  # the right password of a user nobody tried
    assert Browser(served, "127.0.0.22").log_in(*ADDR_USER) == 302  # from another address


# --- the password policy ---------------------------------------------------------------------------------------


WEAK = [
    ("short-pw-1", "This password is too short. It must contain at least 12 characters."),
    ("password1234", "This password is too common."),
    ("123456789012", "This password is entirely numeric."),
    ("newcomer-2026", "The password is too similar to the username."),
]


def test_the_users_page_refuses_a_weak_password_with_the_reasons(served: ServedConsole) -> None:
    admin = Browser(served, "127.0.0.31")
    assert admin.log_in(*ADMIN) == 302
    for password, reason in WEAK:
        status, page = admin.post_form("/users/", {"username": "newcomer", "password": password, "role": "viewer"})
        assert status == 400
        assert reason in page
        assert 'value="newcomer"' in page  # the form again, as filled in
    assert Browser(served, "127.0.0.32").log_in("newcomer", "newcomer-2026") == 200  # not created
    made = admin.post_form("/users/", {"username": "newcomer", "password": "amber-quay-lights-4", "role": "viewer"})
    assert made[0] == 302
    assert Browser(served, "127.0.0.32").log_in("newcomer", "amber-quay-lights-4") == 302


def add_user(console: ServedConsole, name: str, password: str) -> subprocess.CompletedProcess[str]:
    var = console.log.parent  # the console's files and database (console.devserver)
    env = {
        **os.environ,
        "KAZAMI_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "console.settings",
    }
    command = [sys.executable, "manage.py", "add_user", name, "--role", "viewer", "--password-stdin"]
    return subprocess.run(
        command, cwd=REPO, env=env, input=password + "\n", text=True, capture_output=True, timeout=120
    )


def test_add_user_refuses_a_weak_password_with_the_reasons(served: ServedConsole) -> None:
    for password, reason in WEAK:
        refused = add_user(served, "newcomer-cli", password.replace("newcomer", "newcomer-cli"))
        assert refused.returncode == 1
        assert "the password is refused" in refused.stderr
        assert reason in refused.stderr
    assert Browser(served, "127.0.0.41").log_in("newcomer-cli", "newcomer-cli-2026") == 200  # not created
    made = add_user(served, "newcomer-cli", "violet-canal-drift-6")
    assert made.returncode == 0, made.stderr
    assert Browser(served, "127.0.0.41").log_in("newcomer-cli", "violet-canal-drift-6") == 302


# --- websockets: the origin rule and the close codes -----------------------------------------------------------


def open_socket(console: ServedConsole, origin: str | None, session: str | None, path: str) -> tuple[str, object]:
    """What a socket opened with ``origin`` (None: none) and the session cookie (if any) receives first: ("text", the
    fragment) or ("close", its code). A refusal before the handshake (HTTP 403) fails the test."""

    async def receive() -> tuple[str, object]:
        headers = {"Cookie": f"sessionid={session}"} if session else {}
        async with (
            aiohttp.ClientSession(headers=headers) as http,
            http.ws_connect(console.url.replace("http://", "ws://") + path, origin=origin) as ws,
        ):
            message = await ws.receive(timeout=60)
            if message.type is aiohttp.WSMsgType.TEXT:
                return "text", message.data
            assert message.type is aiohttp.WSMsgType.CLOSE, message
            return "close", ws.close_code

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, receive()).result()


def test_a_websocket_opens_only_from_the_consoles_own_origin(served: ServedConsole) -> None:
    viewer = Browser(served, "127.0.0.51")
    assert viewer.log_in(*VIEWER) == 302
    session = viewer.cookies["sessionid"]
    port = int(urlsplit(served.url).port or 0)
    overview = "/ws/clusters/local/overview/"
    kind, fragment = open_socket(served, served.url, session, overview)
    assert kind == "text"
    assert str(fragment).lstrip().startswith('<section id="overview"')
    assert open_socket(served, f"http://127.0.0.1:{port + 1}", session, overview) == ("close", 4400)  # another port
    assert open_socket(served, f"https://127.0.0.1:{port}", session, overview) == ("close", 4400)  # another scheme
    assert open_socket(served, f"http://localhost:{port}", session, overview) == ("close", 4400)  # another host
    assert open_socket(served, None, session, overview) == ("close", 4400)  # no Origin (ALLOWED_HOSTS has no *)


def test_refused_websockets_close_with_the_documented_codes(served: ServedConsole) -> None:
    viewer = Browser(served, "127.0.0.52")
    assert viewer.log_in(*VIEWER) == 302
    session = viewer.cookies["sessionid"]
    for path in (
        "/ws/clusters/local/overview/",
        "/ws/clusters/local/topics/x/tail/",
        "/ws/clusters/local/topics/x/search/",
    ):
        assert open_socket(served, served.url, None, path) == ("close", 4401)  # no session
    assert open_socket(served, served.url, session, "/ws/clusters/nope/overview/") == ("close", 4404)
    assert open_socket(served, served.url, session, "/ws/clusters/local/nothing/") == ("close", 4404)
    _, page = viewer.request("GET", "/clusters/local/topics/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    assert viewer.request("POST", "/logout/", {"csrfmiddlewaretoken": token.group(1)})[0] == 302
    assert open_socket(served, served.url, session, "/ws/clusters/local/overview/") == ("close", 4401)  # logged out
