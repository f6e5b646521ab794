"""A cluster nobody answers for: every page and API endpoint says so quickly, never Django's error page."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import Client

from tests.conftest import free_port, logged_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(clusters_reset: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Client:
    port = free_port()  # bound and released: nothing listens there
    file = tmp_path / "clusters.toml"
    file.write_text(f'[clusters.gone]\nbootstrap_servers = ["127.0.0.1:{port}"]\n')
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    return logged_in()


def test_the_api_answers_503_within_three_seconds(client: Client) -> None:
    started = time.monotonic()
    response = client.get("/api/clusters/gone/")
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert elapsed < 3.5
    body = response.json()
    assert body["error"] == "cluster_unavailable"
    assert "Cannot reach cluster 'gone'" in body["message"]


def test_the_page_says_so_within_three_seconds_and_keeps_its_live_connection(client: Client) -> None:
    started = time.monotonic()
    response = client.get("/clusters/gone/")
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert elapsed < 3.5
    html = response.content.decode()
    assert "The cluster cannot be reached." in html
    assert "recovers when the brokers answer" in html
    assert 'ws-connect="/ws/clusters/gone/overview/"' in html


def test_an_unknown_cluster_is_404_on_page_and_api(client: Client) -> None:
    api = client.get("/api/clusters/nope/")
    assert api.status_code == 404
    assert api.json() == {"error": "unknown_cluster", "message": "No cluster named 'nope'; configured: local, gone."}
    page = client.get("/clusters/nope/")
    assert page.status_code == 404
    assert "No cluster named" in page.content.decode()


def test_unknown_paths_get_our_404_not_djangos(client: Client) -> None:
    api = client.get("/api/nothing/here/")
    assert api.status_code == 404
    assert api.json()["error"] == "not_found"
    page = client.get("/no/such/page")
    assert page.status_code == 404
    html = page.content.decode()
    assert "Not found" in html
    assert "Django" not in html
    assert "Traceback" not in html


def test_the_api_refuses_other_methods(client: Client) -> None:
    assert client.post("/api/clusters/gone/").status_code == 405
