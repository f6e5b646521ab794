"""A real console (Daphne in a subprocess) and a real headless Chromium (Debian's package)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from console.devserver import running_console

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
    settings = {"KAZAMI_LIVE_INTERVAL": "0.5", "KAZAMI_LAG_SAMPLER": "1", "KAZAMI_LAG_SAMPLE_INTERVAL": "1"}
    with running_console(tmp_path_factory.mktemp("console-var"), settings) as url:
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


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()
