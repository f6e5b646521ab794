"""A real console (Daphne in a subprocess) and a real headless Chromium (Debian's package)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from console.devserver import running_console
from tests.conftest import spark_remote

ADMIN = ("browser-admin", "admin-password-1")
VIEWER = ("browser-viewer", "quiet-reading-lamp-7")  # passes the password policy (add_user checks it)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def console_url(kafka_cluster: launcher.ClusterLayout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Jobs go to the session's Spark Connect server; the tests that run them start it (the spark_server fixture).
    settings = {
        "KAZAMI_LIVE_INTERVAL": "0.5",
        "KAZAMI_LAG_SAMPLER": "1",
        "KAZAMI_LAG_SAMPLE_INTERVAL": "1",
        "KAZAMI_SPARK_REMOTE": spark_remote(),
    }
    users = {ADMIN[0]: ("admin", ADMIN[1]), VIEWER[0]: ("viewer", VIEWER[1])}
    with running_console(tmp_path_factory.mktemp("console-var"), settings, users) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: run `make system-deps` (Debian package chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def log_in(page: Any, console_url: str, user: tuple[str, str]) -> None:
    """Through the login form, as a person would."""
    page.goto(f"{console_url}/login/")
    page.fill("#id_username", user[0])
    page.fill("#id_password", user[1])
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


@pytest.fixture(scope="session")
def admin_state(browser: Any, console_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The cookies of a browser logged in as the admin, shared by every page test."""
    context = browser.new_context()
    log_in(context.new_page(), console_url, ADMIN)
    path = str(tmp_path_factory.mktemp("browser") / "admin-state.json")
    context.storage_state(path=path)
    context.close()
    return path


@pytest.fixture
def page(browser: Any, admin_state: str) -> Iterator[Any]:
    """A page in a browser logged in as the admin."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, storage_state=admin_state)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()
